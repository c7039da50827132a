package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/mcpolicy/mcpolicy/clientcfg"
	"github.com/mcpolicy/mcpolicy/clientcfg/entry"
	"github.com/mcpolicy/mcpolicy/clientcfg/importer"
	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/internal/backendtraits"
	"github.com/mcpolicy/mcpolicy/project"
	"github.com/mcpolicy/mcpolicy/runtime/launch"
	"github.com/spf13/cobra"
)

// importOptions are import's flags.
type importOptions struct {
	streams
	Clients  []string // client configs
	Discover bool     // also the project's own client configs
	OutDir   string   // the project folder the policies go to
	EnvFile  string   // where inline secrets go
	DryRun   bool
	Force    bool
}

func newImportCmd() *cobra.Command {
	opts := &importOptions{}
	cmd := &cobra.Command{
		Use:   "import [--client FILE]... [--discover] [--out DIR] [--dry-run]",
		Short: "Write a policy for each local server of your MCP client configs, with the narrowest grants its entry implies, and build it",
		Long: `import reads MCP client configs (--client FILE, or --discover for the
project's own .mcp.json, .vscode/mcp.json...), as lint reads them, and
for each local server writes one policy, OUT/mcpolicy.d/SERVER.cue, with
the narrowest grants its entry implies, each with its reason in a comment:
the paths among its arguments become mounts at the same path (read-only
unless the server's known shape writes there), its env entries names
(an inline secret goes to the env file the launcher reads, mode 600, never
into a policy; a constant becomes a setenv value), a docker/podman entry's
flags the same grants. npx and uvx/pipx packages already installed are run
directly (no runner, no network at spawn); a Go binary's build info says
whether it is static. Remote servers and mcpolicy's own entries are skipped.
Then it builds OUT, and prints the command that replaces the entries
(mcpolicy client ... --write): import never writes a client config.

An existing policy file is not replaced without --force (its bytes are
kept in $XDG_STATE_HOME/mcpolicy/backups/import first); --dry-run prints
the policies and writes nothing.

Exit codes: 0 imported (or nothing to import), 1 a client config that could
not be read or a policy that exists (--force), 2 an imported policy that
does not compile, 8 a file to write reached through a symlink a server may
have left.`,
		Example: `  mcpolicy import --client ~/.claude.json
  mcpolicy import --discover --out . --dry-run
  mcpolicy import --client ~/.config/Claude/claude_desktop_config.json --force`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.streams = streamsOf(cmd)
			return importRun(opts)
		},
	}
	cmd.Flags().StringArrayVar(&opts.Clients, "client", nil, "an MCP client config to import (repeatable)")
	cmd.Flags().BoolVar(&opts.Discover, "discover", false, "also import the project's own client configs (.mcp.json, .vscode/mcp.json, .cursor/mcp.json, ...)")
	cmd.Flags().StringVarP(&opts.OutDir, "out", "o", "", "the project folder the policies go to (default $XDG_CONFIG_HOME/mcpolicy/servers, or ~/.config/mcpolicy/servers)")
	cmd.Flags().StringVar(&opts.EnvFile, "env-file", "", "where inline secrets go (default $XDG_CONFIG_HOME/mcpolicy/env, or ~/.config/mcpolicy/env: the file mcpolicy-launch reads)")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "print the policies; write nothing")
	cmd.Flags().BoolVar(&opts.Force, "force", false, "replace policies import wrote before (a backup of each is kept)")
	return cmd
}

// importFile is one client config and what import made of its entries.
type importFile struct {
	file    string
	client  *clientcfg.Client
	servers []importer.Server
}

// importRun imports every entry of the client configs, writes and builds
// the policies, and prints what it did and the next command.
func importRun(opts *importOptions) error {
	home, _ := os.UserHomeDir()
	files := append([]string{}, opts.Clients...)
	if opts.Discover {
		files = append(files, clientcfg.Discover(".")...)
	}
	if len(files) == 0 {
		return &exitError{code: ExitError, err: fmt.Errorf("nothing to import: name a client config (--client FILE) or --discover the project's")}
	}
	out, envFile := opts.OutDir, opts.EnvFile
	if out == "" {
		out = filepath.Join(filepath.Dir(launch.EnvFileDefault(home, os.Getenv("XDG_CONFIG_HOME"))), "servers")
	}
	if envFile == "" {
		envFile = launch.EnvFileDefault(home, os.Getenv("XDG_CONFIG_HOME"))
	}
	o := importer.Options{Home: home, Path: os.Getenv("PATH"), Getenv: os.Getenv}
	var read []importFile
	var unread []string
	for _, f := range files {
		ls, err := clientcfg.ReadLaunches(f, clientcfg.Options{Home: home})
		if err != nil {
			fmt.Fprintf(opts.Err, "mcpolicy: %v\n", err)
			unread = append(unread, f)
			continue
		}
		read = append(read, importFile{file: f, client: importer.ClientOf(f, home), servers: importer.Import(ls, o)})
	}
	dedupe(read)
	if opts.DryRun {
		return opts.dryRun(read, out, unread)
	}
	return opts.write(read, out, envFile, unread)
}

// dedupe skips an entry whose server name another file's entry took with
// another policy: one project holds each name once.
func dedupe(read []importFile) {
	first := map[string]string{}
	for i := range read {
		for j := range read[i].servers {
			s := &read[i].servers[j]
			if s.Policy == nil {
				continue
			}
			q := *s.Policy
			q.Header = nil // where it came from: the rest must be the same
			body := string(q.Render())
			if prev, ok := first[s.Policy.Server]; ok && prev != body {
				s.Skipped = fmt.Sprintf("another config's entry is imported as %q already, with other grants: import this file with its own --out", s.Policy.Server)
				s.Policy = nil
				continue
			}
			first[s.Policy.Server] = body
		}
	}
}

// dryRun prints each policy and the report, and writes nothing.
func (opts *importOptions) dryRun(read []importFile, out string, unread []string) error {
	for _, f := range read {
		for _, s := range f.servers {
			if s.Policy != nil {
				fmt.Fprintf(opts.Out, "// %s\n%s\n", importer.PolicyFile(out, s.Policy.Server), spellText(string(s.Policy.Render())))
			}
		}
	}
	for _, f := range read {
		opts.report(f, nil)
	}
	fmt.Fprintln(opts.Err, "mcpolicy: nothing written (--dry-run)")
	return unreadError(unread)
}

func unreadError(unread []string) error {
	if len(unread) == 0 {
		return nil
	}
	return &exitError{code: ExitError, err: fmt.Errorf("not imported (unreadable): %s", strings.Join(unread, ", "))}
}

// write writes the policies and the secrets, builds the project and says
// what comes next.
func (opts *importOptions) write(read []importFile, out, envFile string, unread []string) error {
	var untrusted []string
	if proj, plans, err := compileProject(out); err == nil {
		untrusted = writable(proj, plans)
	}
	if len(untrusted) == 0 {
		untrusted = []string{out}
	}
	backups := filepath.Join(entry.DefaultStateDir(), "backups", "import")
	var exists []string
	written := map[string]importer.Written{}
	for _, f := range read {
		for _, s := range f.servers {
			if s.Policy == nil {
				continue
			}
			w, err := importer.WritePolicy(out, s.Policy.Server, s.Policy.Render(), opts.Force, backups, untrusted)
			if err != nil {
				return err
			}
			written[s.Policy.Server] = w
			if w.Status == "exists" {
				exists = append(exists, w.File)
			}
		}
	}
	for _, f := range read {
		opts.report(f, written)
		if err := opts.secrets(f, envFile, written); err != nil {
			return err
		}
	}
	if len(written) == 0 {
		fmt.Fprintln(opts.Out, "no local server to import")
		return unreadError(unread)
	}
	if err := opts.build(out); err != nil {
		fmt.Fprintf(opts.Err, "mcpolicy: the policies are written in %s, but the build refuses them (below): fix them (or the entries, then import --force), run `mcpolicy build %s`, then import again for the next command\n", spell(out), spell(out))
		return err
	}
	opts.next(read, out, written)
	if len(exists) > 0 {
		return &exitError{code: ExitError, err: fmt.Errorf("not replaced (they hold other policies; --force replaces them, keeping a backup): %s", strings.Join(exists, ", "))}
	}
	return unreadError(unread)
}

// secrets moves the inline secrets of a file's entries to the env file,
// and says where they went and how they reach the server.
func (opts *importOptions) secrets(f importFile, envFile string, written map[string]importer.Written) error {
	for _, s := range f.servers {
		if len(s.Secrets) == 0 || s.Policy == nil || written[s.Policy.Server].Status == "exists" {
			continue
		}
		r, err := importer.AddSecrets(envFile, s.Secrets, fmt.Sprintf("%s (entry %q)", f.file, s.Entry))
		if err != nil {
			return err
		}
		w := opts.Out
		if len(r.Added) > 0 {
			fmt.Fprintf(w, "  %s: the inline secret %s went to %s (mode 600), not into the policy\n", spell(s.Entry), strings.Join(r.Added, ", "), spell(envFile))
		}
		if len(r.Kept) > 0 {
			fmt.Fprintf(w, "  %s: %s is in %s already with another value: kept; the entry's value was not copied\n", spell(s.Entry), strings.Join(r.Kept, ", "), spell(envFile))
		}
		names := make([]string, len(s.Secrets))
		for i, x := range s.Secrets {
			names[i] = x.Name
		}
		if f.client != nil && importer.PassesOwnEnv(f.client) {
			fmt.Fprintf(w, "  %s: %s passes %s from its own environment, not from the env file: set it there before starting %s (e.g. `set -a; . %s; set +a`)\n",
				spell(s.Entry), f.client.Name, strings.Join(names, ", "), f.client.Name, envFile)
		}
	}
	return nil
}

// report prints, per server of a file, what was written and why, every
// grant counted, or why it was skipped. Each is one line, spelt whole
// (spell, not spellText): an entry's name, arguments and env names are
// the client file's, which may be hostile, and a line break in one would
// print a line import did not write.
func (opts *importOptions) report(f importFile, written map[string]importer.Written) {
	w := opts.Out
	client := "client unknown"
	if f.client != nil {
		client = f.client.Name
	}
	fmt.Fprintf(w, "%s (%s):\n", spell(f.file), client)
	for _, s := range f.servers {
		if s.Policy == nil {
			fmt.Fprintf(w, "  %s: skipped: %s\n", spell(s.Entry), spell(s.Skipped))
			continue
		}
		p := s.Policy
		what := "would write"
		if wr, ok := written[p.Server]; ok {
			what = wr.Status
			if wr.Status == "exists" {
				what = "NOT written (exists with other bytes; --force)"
			}
		}
		fmt.Fprintf(w, "  %s: %s %s, %s\n", spell(s.Entry), what, spell(filepath.Join(importer.PolicyDir, p.Server+".cue")), compiler.Plural(p.Grants(), "grant"))
		for i, g := range p.GrantLines() {
			fmt.Fprintf(w, "    %d. %s\n", i+1, spell(g))
		}
		for _, c := range p.CommandWhy {
			fmt.Fprintf(w, "    command: %s\n", spell(c))
		}
		for _, n := range s.Notes {
			fmt.Fprintf(w, "    note: %s\n", spell(n))
		}
		if s.LocalScope != "" {
			fmt.Fprintf(w, "    note: the entry is in %s's local scope (projects.%s.mcpServers); `client --write` writes the user scope, which the local entry overrides: remove it (claude mcp remove %s -s local, in that folder) once the confined one works\n", spell(s.LocalScope), spell(s.LocalScope), spell(s.Entry))
		}
	}
}

// build compiles and writes OUT/.mcpolicy, as `mcpolicy build OUT` does.
func (opts *importOptions) build(out string) error {
	proj, plans, err := compileProject(out)
	if err != nil {
		return err
	}
	files, err := project.Artefacts(plans)
	if err != nil {
		return err
	}
	dir := filepath.Join(out, project.DefaultOut)
	if err := project.Write(dir, files, writable(proj, plans)); err != nil {
		return err
	}
	fmt.Fprintf(opts.Out, "built %s: %s, %s\n", spell(dir), compiler.Plural(len(plans), "server"), compiler.Plural(len(files), "file"))
	return nil
}

// next prints, per client file (and engine: a podman entry's server runs
// on the podman backend), the command that shows the diff and the one
// that writes the confined entries.
func (opts *importOptions) next(read []importFile, out string, written map[string]importer.Written) {
	fmt.Fprintln(opts.Out, "next: review the diff, then write the confined entries (the old ones go to a backup):")
	for _, f := range read {
		byBackend := map[string][]string{}
		for _, s := range f.servers {
			if s.Policy == nil || written[s.Policy.Server].Status == "exists" {
				continue
			}
			backend := ""
			if s.Engine != "" && !slices.Contains(backendtraits.ImageDefaults(), s.Engine) {
				backend = s.Engine // podman: the docker artefact, run by podman
			}
			byBackend[backend] = append(byBackend[backend], s.Policy.Server)
		}
		backends := make([]string, 0, len(byBackend))
		for b := range byBackend {
			backends = append(backends, b)
		}
		sort.Strings(backends)
		for _, b := range backends {
			sort.Strings(byBackend[b])
			printNext(opts.Out, f, out, b, byBackend[b])
		}
	}
}

func printNext(w io.Writer, f importFile, out, backend string, servers []string) {
	name := "CLIENT"
	if f.client != nil {
		name = f.client.Name
	}
	abs, _ := filepath.Abs(f.file)
	dir, _ := filepath.Abs(out)
	line := fmt.Sprintf("mcpolicy client %s -p %s --file %s", name, shellQuote(dir), shellQuote(abs))
	if backend != "" {
		line += " --backend " + backend
	}
	for _, s := range servers {
		line += " --server " + s
	}
	line += " --force" // the entries replaced are the user's, not mcpolicy's
	fmt.Fprintf(w, "  %s\n  %s --write\n", spellText(line), spellText(line))
	if f.client == nil {
		fmt.Fprintf(w, "  (CLIENT: the client %s belongs to: %s)\n", spell(f.file), clientNames())
	}
}

func clientNames() string {
	var names []string
	for _, c := range clientcfg.Clients {
		names = append(names, c.Name)
	}
	return strings.Join(names, ", ")
}

// shellQuote quotes a word for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:@+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
