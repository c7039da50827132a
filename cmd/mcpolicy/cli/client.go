package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpolicy/mcpolicy/clientcfg"
	"github.com/mcpolicy/mcpolicy/clientcfg/entry"
	"github.com/mcpolicy/mcpolicy/compiler/diff"
	"github.com/mcpolicy/mcpolicy/emit/registry"
	"github.com/mcpolicy/mcpolicy/internal/hostfile"
	"github.com/mcpolicy/mcpolicy/project"
	"github.com/spf13/cobra"
)

// clientOptions are client's flags and its target.
type clientOptions struct {
	streams
	Target  string   // the client's name
	Policy  string   // -p/--policy
	Backend string   // "": each server's first backend
	Servers []string // only these servers
	File    string   // the client file to edit ("": the target's)
	EnvFile string   // the env file the launcher reads (clients that pass no environment)
	User    bool     // the user-scope file
	Write   bool
	DryRun  bool
	Force   bool // replace entries mcpolicy did not write
	Restore bool // put the newest backup back
}

func newClientCmd() *cobra.Command {
	opts := &clientOptions{}
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
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return missingTarget()
			}
			opts.streams, opts.Target = streamsOf(cmd), args[0]
			return clientRun(opts)
		},
	}
	policyFlag(cmd, &opts.Policy)
	cmd.Flags().StringVarP(&opts.Backend, "backend", "b", "", orList(registry.Names())+" (default: the server's first backend)")
	cmd.Flags().StringArrayVar(&opts.Servers, "server", nil, "only this server (repeatable)")
	cmd.Flags().StringVar(&opts.File, "file", "", "the client file to edit (default: the target's file)")
	cmd.Flags().BoolVar(&opts.User, "user", false, "the user-scope file rather than the project's")
	cmd.Flags().BoolVar(&opts.Write, "write", false, "write the file (its old content goes to a backup)")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "show the diff only (the default without --write)")
	cmd.Flags().BoolVar(&opts.Force, "force", false, "replace entries mcpolicy did not write")
	cmd.Flags().BoolVar(&opts.Restore, "restore", false, "put back the newest backup of the file (what the last write replaced)")
	cmd.MarkFlagsMutuallyExclusive("restore", "write")
	cmd.MarkFlagsMutuallyExclusive("restore", "dry-run")
	cmd.Flags().StringVar(&opts.EnvFile, "env-file", "", "for clients that pass no environment (claude-desktop, windsurf, zed, cline): the file the launcher reads env grant values from (default $XDG_CONFIG_HOME/mcpolicy/env or ~/.config/mcpolicy/env)")
	return cmd
}

// missingTarget is the error of client run without its TARGET: the
// targets, and the command line for the first. Exit 1, a usage error.
func missingTarget() error {
	names := make([]string, len(clientcfg.Clients))
	for i := range clientcfg.Clients {
		names[i] = clientcfg.Clients[i].Name
	}
	return &exitError{code: ExitError, err: fmt.Errorf("client needs a TARGET, the client whose config to merge the entries into: %s\nhint: mcpolicy client %s (a diff; add --write to apply)", strings.Join(names, ", "), names[0])}
}

// clientRun merges the selected servers' entries into the client's file
// (--write), shows the diff, or puts the newest backup back (--restore).
func clientRun(opts *clientOptions) error {
	if err := checkBackend("client", opts.Backend, backendsOf("client")); err != nil {
		return err
	}
	if err := absEnvFile(&opts.EnvFile); err != nil {
		return err
	}
	c, err := clientcfg.LookupClient(opts.Target)
	if err != nil {
		return &exitError{code: ExitError, err: err}
	}
	proj, plans, err := compileProject(opts.Policy)
	if err != nil {
		return err
	}
	home, _ := os.UserHomeDir()
	target, portable, err := entry.Target(c, opts.File, opts.User, proj.Root, home)
	if err != nil {
		return err
	}
	if err := entry.CheckTarget(plans, target, proj.Root, home); err != nil {
		return refused(err)
	}
	untrusted := writable(proj, plans)
	if opts.Restore {
		return opts.restore(c, target, untrusted)
	}
	self, _ := os.Executable()
	entries, err := entry.Entries(entry.EntriesOptions{Client: c, Plans: plans, Servers: opts.Servers,
		Backend: opts.Backend, Root: proj.Root, Home: home, OutDir: filepath.Join(proj.Root, project.DefaultOut),
		Self: self, EnvFile: opts.EnvFile, Portable: portable, Notes: opts.Err})
	if err != nil {
		return refused(err)
	}
	edit := func(src []byte) ([]byte, error) {
		out, err := entry.MergeEntries(target, src, c, entries, opts.Force)
		if err != nil {
			return nil, &exitError{code: ExitInvalid, err: err}
		}
		return out, nil
	}
	if opts.Write && !opts.DryRun {
		if err := opts.save(c, target, untrusted, edit); err != nil {
			return err
		}
		for _, p := range plans {
			if len(opts.Servers) == 0 || slices.Contains(opts.Servers, p.Server) {
				secretsWarnings(opts.Err, p, proj.Root)
			}
		}
		return nil
	}
	return opts.showDiff(target, untrusted, edit)
}

// refused is an entry's refusal a policy error (exit 2), another error as
// it is.
func refused(err error) error {
	var re *entry.RefusedError
	if errors.As(err, &re) {
		return &exitError{code: ExitInvalid, err: err}
	}
	return err
}

// restore puts the newest backup of target back.
func (opts *clientOptions) restore(c *clientcfg.Client, target string, untrusted []string) error {
	saved, from, err := entry.Restore(target, untrusted, "", func(b []byte) error { return entry.Loads(c, target, b) })
	if err != nil {
		return err
	}
	if !saved.Changed {
		fmt.Fprintf(opts.Out, "%s already holds %s\n", spell(saved.File), from)
		return nil
	}
	fmt.Fprintf(opts.Out, "restored %s from %s\nbackup of what it held: %s\n", spell(saved.File), from, saved.Backup)
	return nil
}

// save writes the entries into target under a lock, re-edited if the
// client rewrote the file meanwhile; the replaced bytes go to a backup.
func (opts *clientOptions) save(c *clientcfg.Client, target string, untrusted []string, edit func([]byte) ([]byte, error)) error {
	saved, err := entry.Save(entry.SaveOptions{File: target, Untrusted: untrusted, Edit: edit})
	if err != nil {
		return err
	}
	if !saved.Changed {
		fmt.Fprintf(opts.Out, "%s is up to date\n", spell(target))
		return nil
	}
	fmt.Fprintf(opts.Out, "wrote %s\n", spell(saved.File))
	if saved.Backup != "" {
		fmt.Fprintf(opts.Out, "backup of what it held: %s (mcpolicy client %s --restore puts it back)\n", saved.Backup, c.Name)
	}
	return nil
}

// showDiff shows what writing the entries would change in target, and
// writes nothing.
func (opts *clientOptions) showDiff(target string, untrusted []string, edit func([]byte) ([]byte, error)) error {
	src, err := hostfile.ReadFile(target, untrusted)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	out, err := edit(src)
	if err != nil {
		return err
	}
	if string(out) == string(src) {
		fmt.Fprintf(opts.Out, "%s is up to date\n", spell(target))
		return nil
	}
	fmt.Fprintf(opts.Out, "--- %s\n+++ %s (mcpolicy)\n%s", target, target, diff.TextDiff(string(src), string(out)))
	if !opts.Write {
		fmt.Fprintln(opts.Err, "mcpolicy: nothing written; add --write to apply")
	}
	return nil
}
