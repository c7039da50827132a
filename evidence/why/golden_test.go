package why_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/evidence/why"
	"github.com/mcpolicy/mcpolicy/project"
	"github.com/mcpolicy/mcpolicy/runtime/egress"
	"github.com/rogpeppe/go-internal/txtar"
)

// Each testdata/NAME.txtar is one project and the answers about it. Its
// sections:
//
//	-- from --        optional: a folder (examples/code-index) or a golden
//	                  archive (golden/testdata/X.txtar, its want/ files
//	                  left out) whose files make the project, relative to
//	                  the module root
//	-- home/PATH --   a file of the fake home
//	-- PATH --        a file of the project (after from's)
//	-- hosts --       the names the egress proxy would resolve (as
//	                  mcpolicy run --hosts); without it, none is
//	-- why ARGS --    `mcpolicy why ARGS` run in the project's root with
//	                  the fake home: the section is the expected output
//
// MCPOLICY_UPDATE=1 rewrites the why sections from the answers.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/*.txtar: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txtar"), func(t *testing.T) { runCase(t, f) })
	}
}

func runCase(t *testing.T, file string) {
	ar, err := txtar.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	root, home := filepath.Join(dir, "project"), filepath.Join(dir, "home")
	os.MkdirAll(root, 0o755)
	os.MkdirAll(home, 0o755)
	for _, f := range ar.Files {
		if f.Name == "from" {
			from(t, strings.TrimSpace(string(f.Data)), root, home)
		}
	}
	for _, f := range ar.Files {
		switch {
		case f.Name == "from", f.Name == "hosts", strings.HasPrefix(f.Name, "why "):
			continue
		case strings.HasPrefix(f.Name, "symlink "):
			// -- symlink PATH --: a link in the project (home/PATH: in the
			// home) to the section's first line, where ${HOME} and
			// ${PROJECT_ROOT} are the fake ones.
			name := strings.TrimPrefix(f.Name, "symlink ")
			dst := filepath.Join(root, name)
			if rest, ok := strings.CutPrefix(name, "home/"); ok {
				dst = filepath.Join(home, rest)
			}
			to := strings.NewReplacer("${HOME}", home, "${PROJECT_ROOT}", root).Replace(strings.TrimSpace(string(f.Data)))
			os.MkdirAll(filepath.Dir(dst), 0o755)
			if err := os.Symlink(to, dst); err != nil {
				t.Fatal(err)
			}
		default:
			place(t, f, root, home)
		}
	}
	proj, err := project.Discover(root)
	if err != nil {
		t.Fatal(err)
	}
	plans, err := proj.Compile(home)
	if err != nil {
		t.Fatal(err)
	}
	changed := false
	for i, f := range ar.Files {
		args, ok := strings.CutPrefix(f.Name, "why ")
		if !ok {
			continue
		}
		got := ask(t, plans, root, home, hosts(t, ar), strings.Fields(args))
		if string(f.Data) != got {
			if os.Getenv("MCPOLICY_UPDATE") == "1" {
				ar.Files[i].Data = []byte(got)
				changed = true
				continue
			}
			t.Errorf("why %s:\n--- got\n%s--- want\n%s", args, got, f.Data)
		}
	}
	if changed {
		if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// ask runs what `mcpolicy why ARGS` runs, from the project's root.
func ask(t *testing.T, plans []*compiler.Plan, root, home string, resolve func(string) ([]netip.Addr, error), args []string) string {
	fs := flag.NewFlagSet("why", flag.ContinueOnError)
	server := fs.String("server", "", "")
	backend := fs.String("backend", "", "")
	format := fs.String("format", "text", "")
	host := fs.Bool("host", false, "")
	sandbox := fs.Bool("sandbox", false, "")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		t.Fatalf("why %v: %v", args, err)
	}
	if *server != "" {
		var keep []*compiler.Plan
		for _, p := range plans {
			if p.Server == *server {
				keep = append(keep, p)
			}
		}
		plans = keep
	}
	m := why.Machine{Machine: compiler.Machine{ProjectRoot: root, Home: home}, Cwd: root, FS: true, Resolve: resolve}
	var kind why.Kind
	if *host {
		kind = why.HostPath
	}
	if *sandbox {
		kind = why.SandboxPath
	}
	target := fs.Arg(0)
	tg, err := why.ParseTarget(target, plans, m, kind)
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	a, err := why.Ask(plans, tg, m, *backend)
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	var b bytes.Buffer
	if *format == "json" {
		err = a.JSON(&b)
	} else {
		err = a.Text(&b)
	}
	if err != nil {
		t.Fatal(err)
	}
	// The fake home's and project's real names never reach the answer.
	return strings.NewReplacer(root, "${PROJECT_ROOT}", home, "${HOME}").Replace(b.String())
}

// hosts is the archive's name table, nil without one.
func hosts(t *testing.T, ar *txtar.Archive) func(string) ([]netip.Addr, error) {
	for _, f := range ar.Files {
		if f.Name != "hosts" {
			continue
		}
		r, err := egress.HostsResolver(bytes.NewReader(f.Data), func(_ context.Context, h string) ([]netip.Addr, error) {
			return nil, fmt.Errorf("%s is not in the test's hosts table", h)
		})
		if err != nil {
			t.Fatal(err)
		}
		return func(h string) ([]netip.Addr, error) { return r(context.Background(), h) }
	}
	return nil
}

// from copies a folder or a golden archive of the module into root.
func from(t *testing.T, src, root, home string) {
	mod, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(mod, filepath.FromSlash(src))
	if strings.HasSuffix(src, ".txtar") {
		ar, err := txtar.ParseFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range ar.Files {
			if !strings.HasPrefix(f.Name, "want/") {
				place(t, f, root, home)
			}
		}
		return
	}
	err = filepath.Walk(p, func(q string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(p, q)
		if fi.IsDir() {
			if fi.Name() == ".mcpolicy" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(root, r), 0o755)
		}
		b, err := os.ReadFile(q)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(root, r), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// place writes an archive's file: home/PATH in the home, else in the project.
func place(t *testing.T, f txtar.File, root, home string) {
	if rest, ok := strings.CutPrefix(f.Name, "home/"); ok {
		write(t, filepath.Join(home, rest), f.Data)
		return
	}
	write(t, filepath.Join(root, f.Name), f.Data)
}

func write(t *testing.T, p string, data []byte) {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
