package exposure_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/exposure"
	"github.com/mcpolicy/mcpolicy/schema"
	"github.com/rogpeppe/go-internal/txtar"
)

// TestGolden: each testdata/NAME.txtar is a case. Its comment says what
// it shows; mcpolicy.cue is the policy, compiled without reading the disk
// (sources need not exist: the score is lexical); "score" is the
// breakdown, exposure.Explain of every server in order. A case with
// old.cue also holds "delta": exposure.ExplainDelta of every server from
// old.cue to mcpolicy.cue. MCPOLICY_UPDATE=1 rewrites score and delta.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/*.txtar")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			abs, err := filepath.Abs(file)
			if err != nil {
				t.Fatal(err)
			}
			ar, err := txtar.ParseFile(abs)
			if err != nil {
				t.Fatal(err)
			}
			if len(bytes.TrimSpace(ar.Comment)) == 0 {
				t.Error("the case has no comment saying what it shows")
			}
			root := t.TempDir()
			want := map[string]string{}
			for _, f := range ar.Files {
				switch f.Name {
				case "score", "delta":
					want[f.Name] = string(f.Data)
					continue
				}
				if err := os.WriteFile(filepath.Join(root, f.Name), f.Data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			t.Chdir(root)
			got := map[string]string{}
			plans := compile(t, root, "mcpolicy.cue")
			var b strings.Builder
			for _, p := range plans {
				b.WriteString(exposure.Explain(exposure.Score(p)))
			}
			got["score"] = b.String()
			if _, err := os.Stat("old.cue"); err == nil {
				b.Reset()
				for _, d := range exposure.Deltas(compile(t, root, "old.cue"), plans) {
					b.WriteString(exposure.ExplainDelta(d))
				}
				got["delta"] = b.String()
			}
			update := os.Getenv("MCPOLICY_UPDATE") == "1"
			changed := false
			for _, name := range []string{"score", "delta"} {
				g, has := got[name]
				if !has {
					if _, extra := want[name]; extra {
						t.Errorf("%s: a %q section without old.cue", file, name)
					}
					continue
				}
				if g == want[name] {
					continue
				}
				if update {
					changed = true
					setFile(ar, name, g)
					continue
				}
				t.Errorf("%s: %s differs (MCPOLICY_UPDATE=1 rewrites it)\ngot:\n%s\nwant:\n%s", file, name, g, want[name])
			}
			if changed {
				if err := os.WriteFile(abs, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func setFile(ar *txtar.Archive, name, data string) {
	for i := range ar.Files {
		if ar.Files[i].Name == name {
			ar.Files[i].Data = []byte(data)
			return
		}
	}
	ar.Files = append(ar.Files, txtar.File{Name: name, Data: []byte(data)})
}

// compile loads one policy file of the current folder, as diff's old side
// is compiled: without reading the disk.
func compile(t *testing.T, root, file string) []*compiler.Plan {
	t.Helper()
	pol, err := schema.Load(file, root)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := compiler.Compile([]*schema.Policy{pol}, compiler.Options{Root: root, Home: filepath.Join(root, "home"), NoFS: true})
	if err != nil {
		t.Fatal(err)
	}
	return ps
}
