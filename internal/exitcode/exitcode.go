// Package exitcode is the one table of mcpolicy's exit codes. The CLI and
// the launcher return these constants, and docs/exit-codes.md's table is
// generated from Table, so a code, its name and its doc cannot drift apart.
// It is a leaf: mcpolicy-launch imports it without the compiler.
package exitcode

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
)

// The codes. Anything else a command exits with is the server's own status.
const (
	OK             = 0
	Error          = 1
	Invalid        = 2
	Stale          = 3
	Unsupported    = 4
	Findings       = 5
	Widened        = 6
	Disagrees      = 7
	Tampered       = 8
	LauncherFailed = 126
)

// Code is one row of the table.
type Code struct {
	Code     int
	Name     string // the constant's name
	Commands string // which commands return it (markdown)
	Meaning  string // markdown
	Cause    string // a typical cause (markdown)
}

// Table lists every code, in order.
var Table = []Code{
	{OK, "OK", "every command", "success", ""},
	{Error, "Error", "every command",
		"usage, I/O or internal error; `mcpolicy lint`: a client config, or an entry in one, it could not read even after repairs, or a file that yields no server (a bare entry, a format lint does not read) (the others are still linted and reported, and 1 wins over 5: the lint is incomplete); `mcpolicy check`: a client config it could not read (the others are still checked and their drift reported, and 1 wins over 6, the check being incomplete; 8, a tampered artefact, still wins over 1)",
		"unknown flag, missing file, unknown server name in `explain`; a config with two unclosed braces, an entry whose `args` is a string"},
	{Invalid, "Invalid", "every command that reads a policy",
		"a policy is invalid, or asks for something a backend cannot enforce",
		"a type error, an unknown field, a `..` escape, `network: allow` with the landlock backend, `limits` with bwrap"},
	{Stale, "Stale", "`mcpolicy build --check`, `mcpolicy pin --check`",
		"the output folder differs from what a build would write; the server's tools/list differs from its pin",
		"a policy changed and `mcpolicy build` was not run (an artefact edited by hand while its plan stayed the same is 8); a server update changed a tool's description"},
	{Unsupported, "Unsupported", "`mcpolicy exec`, `mcpolicy-launch`, `mcpolicy doctor`",
		"this machine cannot enforce what the policy demands; `mcpolicy doctor`: no backend can run here",
		"no Landlock, ABI < 3, no user namespaces and no accepted `landlock-tcp-only`"},
	{Findings, "Findings", "`mcpolicy lint`, `mcpolicy check`",
		"`lint`: a finding at or above `--fail-on` (default `error`), not waived; a server whose exposure score is above `--max-exposure` (EXPOSURE_LIMIT); `check`: a server session wrote, in a read-write grant, an untracked file of a kind the host runs, still there and not accepted (`mcpolicy sessions`), or the write report is incomplete (8, 1 and 6 outrank it)",
		"a home mount, an inline secret, `--privileged`; a planted `__pycache__/*.pyc` or `.pth`"},
	{Widened, "Widened", "`mcpolicy diff`, `mcpolicy check`",
		"`diff`: a grant widened and no waiver in the new policy acknowledges it (`--fail-on any`: any change); `check`: a client entry drifted from the policy, or pins a stale artefact",
		"ro -> rw, a mount moved to a parent, network opened; an entry edited by hand"},
	{Disagrees, "Disagrees", "`mcpolicy prove`",
		"a row where the kernel's answer disagrees with the plan",
		"a sandbox wider than its plan"},
	{Tampered, "Tampered", "`mcpolicy-launch`, the seatbelt wrapper, `mcpolicy run --sha256` and `--plan`, `mcpolicy build`, `mcpolicy check`, `mcpolicy prove`, `mcpolicy client`, `mcpolicy suggest --write`",
		"refused as tampered: `mcpolicy-launch` (the artefact's digest is not the one the client entry pins, or a mount source is, or passes through, a symlink below the project or home), the seatbelt wrapper (the same for a source), `mcpolicy run --sha256` (the plan file's digest is not the one the client entry pins, or the file is not a plan of its project) and `mcpolicy run --plan` (the policy compiles to another plan), `mcpolicy build --check` and `mcpolicy check` (an artefact differs from what its own plan builds); `build`, `prove`, `client` and `suggest --write` (a file they write or remove is, or is reached through, a symlink, or is a FIFO or other non-file, inside the project or a read-write mount source: [policy.md](policy.md#protected-paths))",
		"a server with write access rewrote `.mcpolicy/` or swapped a nested source for a link; a file edited by hand after the build; a server left `evidence/evidence.md -> ~/.bashrc`. Nothing is started, nothing written"},
	{LauncherFailed, "LauncherFailed", "`mcpolicy exec`, `mcpolicy-launch`",
		"the launcher failed inside its namespaces, before the server started",
		"the scratch target does not exist on the host"},
}

// Markers delimit the generated table in docs/exit-codes.md.
const (
	Begin = "<!-- generated: exit codes (exitcode.Table; `make docs`); do not edit -->"
	End   = "<!-- end generated: exit codes -->"
)

// Markdown renders Table.
func Markdown() string {
	var b strings.Builder
	b.WriteString("| code | name | returned by | meaning | typical cause |\n|---|---|---|---|---|\n")
	for _, c := range Table {
		fmt.Fprintf(&b, "| %d | `%s` | %s | %s | %s |\n", c.Code, c.Name, c.Commands, c.Meaning, c.Cause)
	}
	return b.String()
}

// Splice replaces the text between the markers in doc with Markdown.
func Splice(doc string) (string, error) {
	i, j := strings.Index(doc, Begin), strings.Index(doc, End)
	if i < 0 || j < i {
		return "", fmt.Errorf("no %q ... %q markers", Begin, End)
	}
	return doc[:i] + Begin + "\n\n" + Markdown() + "\n" + doc[j:], nil
}

// OfWait is a child's exit status as a shell reports it — its code, or
// 128+N when signal N ended it — from exec.Cmd.Wait's error; a failure
// to wait at all is returned as the error.
func OfWait(err error) (int, error) {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ee.ExitCode(), nil
	}
	return 0, err
}
