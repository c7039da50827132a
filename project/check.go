package project

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/mcpolicy/mcpolicy/clientcfg"
	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/lint"
	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/internal/findings"
	"github.com/mcpolicy/mcpolicy/internal/position"
	"github.com/mcpolicy/mcpolicy/schema"
)

// IDs of check's own findings; a drifted grant is reported under its diff
// kind, an unread file as PARSE.
const (
	PinTampered      = "PIN_TAMPERED"
	PinStale         = "PIN_STALE"
	EnvUnmet         = "ENV_UNMET"
	ArtefactTampered = "ARTEFACT_TAMPERED"
	ArtefactStale    = "ARTEFACT_STALE"
	Unmanaged        = "UNMANAGED_ENTRY"
)

// CheckOptions say what `mcpolicy check` compares.
type CheckOptions struct {
	Project *Project
	Plans   []*compiler.Plan
	// Out is the output folder build writes (default: the project's
	// .mcpolicy).
	Out string
	// Clients are the client files to read; none: the project's own and
	// the user-scope files of every client (clientcfg.UserFiles).
	Clients []string
	// Home and ConfigHome ($XDG_CONFIG_HOME, may be "") place the
	// user-scope files.
	Home, ConfigHome string
}

// CheckResult is what check found: each finding with its text line
// (check's own layout, `entry "NAME"`), the files it could not read, and
// whether anything drifted or was tampered with.
type CheckResult struct {
	Findings []findings.Finding
	Lines    []string
	Unread   []string
	Drift    bool
	Tamper   bool
	// Clients are the client files compared (read or not); Looked, where
	// they were looked for when none was named; Built, whether the
	// output folder was there to compare.
	Clients []string
	Looked  []string
	Built   bool
}

// out is the output folder.
func (o CheckOptions) out() string {
	if o.Out != "" {
		return o.Out
	}
	return filepath.Join(o.Project.Root, DefaultOut)
}

func (r *CheckResult) add(f findings.Finding, line string) {
	r.Findings = append(r.Findings, f)
	r.Lines = append(r.Lines, line)
}

// CheckClients compares what runs with what the policy compiles to: the
// output folder with the artefacts a build writes (as `build --check`), and
// every client entry for a server of the policy — its pinned artefact, its
// env grants, its grants read back from the launch command, and whether it
// is mcpolicy's own entry at all. An entry a hand edit took out of
// mcpolicy's hands (a `bwrap …` or bare `docker run` in its place) runs
// with none of the launcher's checks, so it is drift too.
func CheckClients(o CheckOptions) (*CheckResult, error) {
	r := &CheckResult{}
	if err := r.artefacts(o); err != nil {
		return nil, err
	}
	files, user := o.Clients, map[string]bool{}
	if len(files) == 0 {
		files = clientcfg.Discover(o.Project.Root)
		for _, f := range clientcfg.UserFiles(o.Home, o.ConfigHome) {
			files = append(files, f)
			user[f] = true
		}
		for _, rel := range clientcfg.ProjectFiles {
			r.Looked = append(r.Looked, filepath.Join(o.Project.Root, filepath.FromSlash(rel)))
		}
		r.Looked = append(r.Looked, clientcfg.UserPlaces(o.Home, o.ConfigHome)...)
	}
	r.Clients = files
	for _, f := range files {
		ts, err := clientcfg.Read(f, o.Home)
		if err != nil {
			// As lint: a client config is not a policy; its position is
			// reported and the next file is checked.
			pos, msg := UnreadNote(f, err, "checked")
			r.add(findings.Finding{Rule: lint.ParseID, Level: findings.Error, Pos: pos, Message: msg},
				fmt.Sprintf("%s: %s error %s", pos, lint.ParseID, msg))
			r.Unread = append(r.Unread, pos.String())
			continue
		}
		if user[f] {
			ts = clientcfg.ForProject(ts, o.Project.Root)
		}
		r.entries(o, ts)
	}
	return r, nil
}

// artefacts compares the output folder with what a build writes, as
// `build --check` does; a project never built (no folder) runs no
// artefact and is left to its entries.
func (r *CheckResult) artefacts(o CheckOptions) error {
	out := o.out()
	if _, err := os.Lstat(out); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	r.Built = true
	files, err := Artefacts(o.Plans)
	if err != nil {
		return err
	}
	d, err := Check(out, files)
	if err != nil {
		return err
	}
	stale := func(names []string, what string) {
		for _, n := range names {
			pos := position.Pos{File: filepath.Join(out, filepath.FromSlash(n))}
			msg := what + ": run `mcpolicy build`, then `mcpolicy client` again, and review the diff"
			r.add(findings.Finding{Rule: ArtefactStale, Level: findings.Error, Pos: pos, Message: msg}, fmt.Sprintf("%s: %s", pos, msg))
			r.Drift = true
		}
	}
	stale(d.Missing, "missing: the policy builds it")
	stale(d.Stale, "stale: the policy changed since the build")
	stale(d.Extra, "extra: the policy builds no such file")
	for _, n := range d.Tampered {
		pos := position.Pos{File: filepath.Join(out, filepath.FromSlash(n))}
		msg := "TAMPERED: the artefact differs from what its own plan builds (the policy did not change it): it was edited after the build, and an entry that pins its new digest runs the edit — by a server with write access? Inspect `git diff`, rebuild, and write the entries again"
		r.add(findings.Finding{Rule: ArtefactTampered, Level: findings.Error, Pos: pos, Message: msg}, fmt.Sprintf("%s: %s", pos, msg))
		r.Drift, r.Tamper = true, true
	}
	return nil
}

// entries checks one file's entries for the policy's servers.
func (r *CheckResult) entries(o CheckOptions, ts []*readback.Target) {
	for _, u := range clientcfg.NotManaged(o.Plans, ts, o.out()) {
		r.add(findings.Finding{Rule: Unmanaged, Level: findings.Error, Server: u.Server, Pos: u.Entry, Message: u.What},
			fmt.Sprintf("%s: entry %q: %s", u.Entry, u.Server, u.What))
		r.Drift = true
	}
	for _, p := range clientcfg.Pins(o.Plans, ts) {
		id := PinStale
		if p.Tampered {
			id = PinTampered
		}
		r.add(findings.Finding{Rule: id, Level: findings.Error, Server: p.Server, Pos: p.Entry, Message: p.What},
			fmt.Sprintf("%s: entry %q: %s", p.Entry, p.Server, p.What))
		r.Drift = true
		r.Tamper = r.Tamper || p.Tampered
	}
	for _, u := range clientcfg.EnvCheck(o.Plans, ts, o.Project.Root, o.Home) {
		r.add(findings.Finding{Rule: EnvUnmet, Level: findings.Error, Server: u.Server, Pos: u.Entry, Message: u.What},
			fmt.Sprintf("%s: entry %q: %s", u.Entry, u.Server, u.What))
		r.Drift = true
	}
	for _, d := range clientcfg.Drift(o.Plans, ts, o.Project.Root) {
		r.Drift = true
		f := d.Change.Finding()
		f.Pos, f.Against = d.Entry, d.Policy // the entry drifted from the policy
		r.add(f, fmt.Sprintf("%s: entry %q %s %s: %s (the policy: %s)",
			d.Entry, d.Change.Server, d.Change.Verdict, d.Change.Kind, d.Change.What, d.Policy))
	}
}

// UnreadNote is the PARSE error for a client config that cannot be read,
// at its position when the reader gives one.
func UnreadNote(file string, err error, verb string) (position.Pos, string) {
	pos, msg := schema.Pos{File: file}, err.Error()
	var se *schema.Error
	var pe *fs.PathError
	switch {
	case errors.As(err, &se):
		pos, msg = se.Pos, se.Msg
		if se.Path != "" {
			msg = se.Path + ": " + se.Msg
		}
	case errors.As(err, &pe):
		msg = "cannot " + pe.Op + ": " + pe.Err.Error()
	}
	return pos, msg + "; the file is not " + verb
}
