package layering

import (
	"os"
	"os/exec"
	"path"
	"regexp"
	"strings"
	"testing"
)

// docRow is one row of docs/architecture.md's table of layers: its name
// and the packages its second column names in backticks.
type docRow struct {
	name     string
	packages []string
}

var backticked = regexp.MustCompile("`([^`]+)`")

// readLayersTable reads the table under "## The layers".
func readLayersTable(t *testing.T) []docRow {
	t.Helper()
	b, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## The layers\n")
	if !ok {
		t.Fatal(`docs/architecture.md has no "## The layers" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var rows []docRow
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.HasPrefix(line, "|") {
			continue
		}
		name := strings.TrimSpace(cells[1])
		if name == "layer" || strings.Trim(name, "-") == "" {
			continue
		}
		row := docRow{name: name}
		for _, m := range backticked.FindAllStringSubmatch(cells[2], -1) {
			row.packages = append(row.packages, m[1])
		}
		rows = append(rows, row)
	}
	return rows
}

// TestArchitectureDoc holds docs/architecture.md's table of layers to the
// tree and to TestLayering's layers: the same layers in the same order,
// and every package named in the row of the layer its folder puts it in
// (another row may name it too, as what that layer imports).
// A package added, moved or removed fails here until the prose says so.
// Generators (a package main named gen) and packages under another's
// internal/ folder are their parent's business and need no row.
func TestArchitectureDoc(t *testing.T) {
	rows := readLayersTable(t)
	if len(rows) != len(layers) {
		t.Fatalf("docs/architecture.md's table has %d layers, TestLayering %d", len(rows), len(layers))
	}
	named := map[string]map[int]bool{} // package -> the doc rows naming it
	for i, row := range rows {
		if !strings.HasPrefix(row.name, layers[i].name) {
			t.Errorf("row %d of docs/architecture.md's table is %q, TestLayering's layer %d is %q", i+1, row.name, i+1, layers[i].name)
		}
		for _, p := range row.packages {
			for _, name := range []string{p, "internal/" + p} {
				if name == p || layers[i].name == "leaves" {
					if named[name] == nil {
						named[name] = map[int]bool{}
					}
					named[name][i] = true
				}
			}
		}
	}
	out, err := exec.Command("go", "list", mod+"...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		layer, ok := layerOf(pkg)
		if !ok {
			continue
		}
		rel := strings.TrimPrefix(pkg, mod)
		if path.Base(rel) == "gen" || strings.Contains(strings.TrimPrefix(rel, "internal/"), "internal/") {
			continue
		}
		if !named[rel][layer] {
			t.Errorf("%s is not named in the %q row of docs/architecture.md's table of layers, where its folder puts it", rel, layers[layer].name)
		}
	}
}
