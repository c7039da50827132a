package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpolicy/mcpolicy/clientcfg"
	"github.com/mcpolicy/mcpolicy/clientcfg/entry"
	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/diff"
	"github.com/mcpolicy/mcpolicy/emit/backends"
	"github.com/mcpolicy/mcpolicy/internal/hostfile"
	"github.com/mcpolicy/mcpolicy/internal/report"
	"github.com/mcpolicy/mcpolicy/project"
	"github.com/spf13/cobra"
)

func newClientCmd() *cobra.Command {
	var path, backend, file, envFile string
	var servers []string
	var write, dryRun, force, user, restore bool
	cmd := &cobra.Command{
		Use:   "client TARGET [--backend B] [--server NAME...] [--file PATH] [--write | --dry-run | --restore]",
		Short: "Write the entries that spawn each server confined into an MCP client's config",
		Long: `client renders, for each server, the entry an MCP client needs to start it
confined and merges it into the client's file. bwrap and Landlock entries
run mcpolicy-launch --sha256 DIGEST .mcpolicy/BACKEND/SERVER.json (the
artefact must be built first: the entry pins its digest, and the launcher
refuses any other content, exit 8); docker/podman entries run
mcpolicy-launch --engine ENGINE --project-root ROOT --sha256 DIGEST
.mcpolicy/docker/SERVER.json -- run ... (the launcher refuses arguments
that are not that artefact's, exit 8); seatbelt
entries the wrapper; egress servers mcpolicy run --project-root ROOT
--sha256 DIGEST .mcpolicy/plan/SERVER.json (the plan build wrote, started
without reading the policy; another digest is refused, exit 8). The
launcher must be installed beside mcpolicy (or on PATH), and neither it
nor the client file may lie in a writable grant of any of the project's
servers (a symlink there is judged where it is, and not followed). The file's
own style is kept (strict JSON stays strict, indentation and newlines
stay), as are other entries, key order, comments and trailing commas;
the file is replaced
atomically, under a lock other mcpolicy runs wait for; if the client
rewrote it meanwhile, the entries are merged again into what it holds now.
Its mode, owner and group are kept, a symlink's target is written (the
link stays), a hard-linked or read-only file is refused. What the write
replaced is kept in $XDG_STATE_HOME/mcpolicy/backups (20 generations;
--restore puts the newest back). Without --write it shows the
diff and writes nothing. An entry mcpolicy did not write is not replaced
without --force; a file that does not parse is never touched.

Targets: claude-desktop, claude-code, cursor, vscode, windsurf, zed, gemini,
cline, codex. The project-scope file is the default where the client has
one (.mcp.json, .cursor/mcp.json, .vscode/mcp.json...); --user picks the
user-scope file, --file any file.`,
		Example: `  mcpolicy client vscode                      # show the diff for .vscode/mcp.json
  mcpolicy client claude-desktop --write      # merge into Claude Desktop's config
  mcpolicy client codex --backend landlock --user --write`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := clientcfg.LookupClient(args[0])
			if err != nil {
				return &exitError{code: ExitError, err: err}
			}
			proj, plans, err := compileProject(path)
			if err != nil {
				return err
			}
			home, _ := os.UserHomeDir()
			self, _ := os.Executable()
			target, portable := file, false
			switch {
			case target != "":
				// Relative to where mcpolicy runs: made absolute before it is
				// held against the grants, which are.
				if target, err = filepath.Abs(target); err != nil {
					return err
				}
			case user || c.Project == "":
				target = c.User(home)
			default:
				target, portable = filepath.Join(proj.Root, c.Project), true
			}
			// The file starts every server it names, the ones not selected
			// by --server too: none of the project's servers may write it.
			for _, p := range plans {
				if err := entry.CheckOutsideGrants(p, compiler.Machine{ProjectRoot: proj.Root, Home: home},
					map[string]string{"client config": target}); err != nil {
					return &exitError{code: ExitInvalid, err: err}
				}
			}
			untrusted := writable(proj, plans)
			// The backups hold the file's tokens, and --restore puts back
			// what is there: no server of the project may reach them.
			if err := clientcfg.BackupsOutsideProject(plans, entry.DefaultStateDir(), proj.Root, home); err != nil {
				return &exitError{code: ExitInvalid, err: err}
			}
			if restore {
				saved, from, err := entry.Restore(target, untrusted, "", func(b []byte) error { return entry.Loads(c, target, b) })
				if err != nil {
					return err
				}
				if !saved.Changed {
					fmt.Fprintf(cmd.OutOrStdout(), "%s already holds %s\n", spell(saved.File), from)
					return nil
				}
				fmt.Fprintf(cmd.OutOrStdout(), "restored %s from %s\nbackup of what it held: %s\n", spell(saved.File), from, saved.Backup)
				return nil
			}
			type serverEntry struct {
				server string
				l      *entry.Launch
			}
			var entries []serverEntry
			want := map[string]bool{}
			for _, s := range servers {
				want[s] = true
			}
			for _, p := range plans {
				if len(want) > 0 && !want[p.Server] {
					continue
				}
				b := backend
				if b == "" {
					b = p.Backends[0]
				}
				l, err := entry.LaunchFor(c, p, b, proj.Root, home, filepath.Join(proj.Root, project.DefaultOut), self, envFile, portable)
				var efe *entry.EnvFileError
				if errors.As(err, &efe) {
					return &exitError{code: ExitInvalid, err: err}
				}
				if err != nil {
					return err
				}
				if f := entry.EnvFileOf(l); f != "" {
					// Every server of the project, not only this one, must
					// neither read nor write the file (LaunchFor checks p's).
					if err := clientcfg.EnvFileOutsideProject(plans, f, proj.Root, home); err != nil {
						return &exitError{code: ExitInvalid, err: err}
					}
					// And the launcher must be able to read it at spawn.
					exists, err := entry.EnvFileUsable(c.Name, f)
					if err != nil {
						return &exitError{code: ExitInvalid, err: err}
					}
					if !exists {
						fmt.Fprintf(cmd.ErrOrStderr(), "%s passes no environment to servers: %q takes %s from %s at spawn, which does not exist yet (NAME=value lines, mode 600; `install -m 600 /dev/null %s` creates it)\n",
							c.Name, p.Server, strings.Join(p.EnvNames(), ", "), f, f)
					} else {
						fmt.Fprintf(cmd.ErrOrStderr(), "%s passes no environment to servers: %q takes %s from %s at spawn\n",
							c.Name, p.Server, strings.Join(p.EnvNames(), ", "), f)
					}
				}
				for _, q := range plans {
					if err := entry.CheckOutsideGrants(q, compiler.Machine{ProjectRoot: proj.Root, Home: home},
						map[string]string{"launcher": l.Command}); err != nil {
						return &exitError{code: ExitInvalid, err: err}
					}
				}
				entries = append(entries, serverEntry{p.Server, l})
			}
			edit := func(src []byte) ([]byte, error) {
				out := src
				for _, e := range entries {
					var err error
					if out, err = entry.Merge(target, out, c, e.server, e.l, force); err != nil {
						return nil, &exitError{code: ExitInvalid, err: err}
					}
				}
				return out, nil
			}
			if write && !dryRun {
				// Under a lock, re-edited if the client rewrote the file
				// meanwhile; the replaced bytes go to a backup.
				saved, err := entry.Save(entry.SaveOptions{File: target, Untrusted: untrusted, Edit: edit})
				if err != nil {
					return err
				}
				if !saved.Changed {
					fmt.Fprintf(cmd.OutOrStdout(), "%s is up to date\n", spell(target))
					return nil
				}
				fmt.Fprintf(cmd.OutOrStdout(), "wrote %s\n", spell(saved.File))
				if saved.Backup != "" {
					fmt.Fprintf(cmd.OutOrStdout(), "backup of what it held: %s (mcpolicy client %s --restore puts it back)\n", saved.Backup, c.Name)
				}
				return nil
			}
			src, err := hostfile.ReadFile(target, untrusted)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			out, err := edit(src)
			if err != nil {
				return err
			}
			if string(out) == string(src) {
				fmt.Fprintf(cmd.OutOrStdout(), "%s is up to date\n", spell(target))
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "--- %s\n+++ %s (mcpolicy)\n%s", target, target, diff.TextDiff(string(src), string(out)))
			if !write {
				fmt.Fprintln(cmd.ErrOrStderr(), "mcpolicy: nothing written; add --write to apply")
			}
			return nil
		},
	}
	policyFlag(cmd, &path)
	cmd.Flags().StringVarP(&backend, "backend", "b", "", orList(backends.Names())+" (default: the server's first backend)")
	cmd.Flags().StringArrayVar(&servers, "server", nil, "only this server (repeatable)")
	cmd.Flags().StringVar(&file, "file", "", "the client file to edit (default: the target's file)")
	cmd.Flags().BoolVar(&user, "user", false, "the user-scope file rather than the project's")
	cmd.Flags().BoolVar(&write, "write", false, "write the file (its old content goes to a backup)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "show the diff only (the default without --write)")
	cmd.Flags().BoolVar(&force, "force", false, "replace entries mcpolicy did not write")
	cmd.Flags().BoolVar(&restore, "restore", false, "put back the newest backup of the file (what the last write replaced)")
	cmd.MarkFlagsMutuallyExclusive("restore", "write")
	cmd.MarkFlagsMutuallyExclusive("restore", "dry-run")
	cmd.Flags().StringVar(&envFile, "env-file", "", "for clients that pass no environment (claude-desktop, windsurf, zed, cline): the file the launcher reads env grant values from (default $XDG_CONFIG_HOME/mcpolicy/env or ~/.config/mcpolicy/env)")
	return cmd
}

func newCheckCmd() *cobra.Command {
	var path, format string
	var clients []string
	cmd := &cobra.Command{
		Use:   "check [-p POLICY] [--client FILE...] [--format F]",
		Short: "Report artefacts and client entries that drifted from what the policy compiles to",
		Long: `check compares what runs with what the policy compiles to. The output
folder is compared with what a build writes, as build --check does: an
artefact edited after the build is TAMPERED (exit 8) even when an entry
pins its new digest; a missing, stale or extra file is drift (exit 6).
Then each client file is read (default: the project's own, as lint
--discover finds them, and every client's user-scope file — ~/.claude.json,
Claude Desktop's, ~/.cursor/mcp.json, VS Code's, ~/.codex/config.toml... —
for the entries that apply to this project): the launch commands of the
entries mcpolicy manages are read back into plans and compared with the
policy's, grant by grant: a hand-widened mount is reported as widened.
Exit 6 on drift. An entry named for a server of the policy that mcpolicy
does not recognise as its own (a hand-written bwrap or docker command in
its place) is reported as UNMANAGED_ENTRY (exit 6): nothing holds it to
the policy, and so is an egress entry of the earlier form (mcpolicy run
--policy ... --plan HASH, which compiled the policy at every start). An
entry that pins an artefact (mcpolicy-launch --sha256) or a plan (mcpolicy
run --sha256) whose file no longer has that digest is reported: as TAMPERED (exit 8) when the
file still names the policy's plan (something edited it after the build),
as stale (exit 6) when the policy changed since the entry was written. A
client file that cannot be read is a PARSE error at its position, and the
next is checked; the check is then incomplete: exit 1, as lint's.
Then the write report (see mcpolicy sessions): a file a recorded session
of the project wrote in a read-write grant, untracked by git, of a kind
the host runs (bytecode, .pth, shared object, executable, hook, ...) and
still there, in a session not accepted, is listed with its session and
server: exit 5 (8, 1 and 6 outrank it). stderr says how many sessions
were read, and from which folder; records in a folder that is not yours,
or that group or others may write, are refused (exit 1).

--format github or sarif reports each drifted grant under its diff kind
(docs/diff-kinds.md), a pin as PIN_TAMPERED or PIN_STALE, the output
folder as ARTEFACT_TAMPERED or ARTEFACT_STALE, an entry that is not
mcpolicy's as UNMANAGED_ENTRY, an unmet env grant as ENV_UNMET, a flagged
write as WRITE_FLAGGED, an unread file as PARSE.`,
		Example: `  mcpolicy check
  mcpolicy check --client ~/.cursor/mcp.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := report.Check(format); err != nil {
				return &exitError{code: ExitError, err: err}
			}
			// A server can make its policy stop compiling (a protected name
			// created in a Landlock grant): what it wrote is still shown,
			// then the policy's error.
			orWrites := func(proj *project.Project, err error) error {
				var rep checkReport
				_, summary, werr := rep.writes(proj, nil)
				if werr != nil {
					summary = werr.Error()
				}
				rep.write(cmd.OutOrStdout(), format, false)
				fmt.Fprintln(cmd.ErrOrStderr(), summary)
				return err
			}
			proj, plans, err := compileProject(path)
			if err != nil {
				if proj != nil {
					return orWrites(proj, err)
				}
				return err
			}
			home, _ := os.UserHomeDir()
			res, err := project.CheckClients(project.CheckOptions{Project: proj, Plans: plans, Clients: clients,
				Home: home, ConfigHome: os.Getenv("XDG_CONFIG_HOME")})
			if err != nil {
				return orWrites(proj, err)
			}
			var rep checkReport
			for i, f := range res.Findings {
				rep.add(f, res.Lines[i])
			}
			drift, tamper, unread := res.Drift, res.Tamper, res.Unread
			written, summary, err := rep.writes(proj, plans)
			if err != nil {
				return &exitError{code: ExitError, err: err}
			}
			fmt.Fprintln(cmd.ErrOrStderr(), summary)
			if err := rep.write(cmd.OutOrStdout(), format, !drift && len(unread) == 0 && !written); err != nil {
				return &exitError{code: ExitError, err: err}
			}
			// A tampered artefact is the one finding an unread file cannot
			// outrank; otherwise the check is incomplete: as lint, 1 wins.
			if len(unread) > 0 && tamper {
				fmt.Fprintf(cmd.ErrOrStderr(), "not checked (see PARSE): %s\n", strings.Join(unread, ", "))
			}
			if tamper {
				return &errSilent{code: ExitTampered}
			}
			if len(unread) > 0 {
				return &exitError{code: ExitError, err: fmt.Errorf("not checked (see PARSE): %s", strings.Join(unread, ", "))}
			}
			if drift {
				return &errSilent{code: ExitWidened}
			}
			if written {
				return &errSilent{code: ExitFindings}
			}
			return nil
		},
	}
	policyFlag(cmd, &path)
	cmd.Flags().StringArrayVar(&clients, "client", nil, "a client file to check (repeatable)")
	cmd.Flags().StringVarP(&format, "format", "f", "text", "output: "+strings.Join(report.Formats, ", "))
	return cmd
}
