//go:build linux

package launch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
)

// TestHiddenMatches: a pattern matches in its own folder only, without
// following a symlink; a missing folder hides nothing; a match that is a
// symlink or a hard-linked file is refused, naming it and the fix.
func TestHiddenMatches(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"secrets/k", "config/sub", "src"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{".env", ".env.local", ".envrc", "config/a.pem", "config/b.txt", "config/sub/c.pem", "src/.env"} {
		if err := os.WriteFile(filepath.Join(root, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src := NewSources(root)
	got, err := src.hiddenMatches(root, []string{".env*", "secrets", "config/*.pem", "missing/*", "nothing"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range got {
		names = append(names, m.rel+map[bool]string{true: "/", false: ""}[m.dir])
	}
	if s := strings.Join(names, " "); s != ".env .env.local .envrc config/a.pem secrets/" {
		t.Errorf("matches %q", s)
	}

	for _, c := range []struct {
		name, want string
		make       func() error
	}{
		{"a symlink", "is a symlink", func() error { return os.Symlink("src/.env", filepath.Join(root, ".env.link")) }},
		{"a hard link", "has 2 hard links", func() error { return os.Link(filepath.Join(root, "src/.env"), filepath.Join(root, ".env.hard")) }},
	} {
		if err := c.make(); err != nil {
			t.Fatal(err)
		}
		_, err := src.hiddenMatches(root, []string{".env*"})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "refusing to start") {
			t.Errorf("%s matching .env*: %v, want a refusal saying %q", c.name, err, c.want)
		}
		os.Remove(filepath.Join(root, ".env.link"))
		os.Remove(filepath.Join(root, ".env.hard"))
	}

	// A folder on the pattern's way that is a symlink is refused too.
	if err := os.Symlink("config", filepath.Join(root, "conf")); err != nil {
		t.Fatal(err)
	}
	if _, err := src.hiddenMatches(root, []string{"conf/*.pem"}); err == nil {
		t.Errorf("conf/*.pem through a symlinked folder: matched, want a refusal")
	}
}

// TestEngineHideOddName (#42, red team): a match whose name holds "\r\n"
// (which the engines' CSV reading of --mount turns into "\n") would put
// the mask at another name, leaving the match in view. The launcher
// refuses it; an ordinary name with a comma or a quote is masked where it
// is.
func TestEngineHideOddName(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	for _, c := range []struct {
		name   string
		refuse bool
	}{
		{".env,target=x,readonly=false", false},
		{`.env"x`, false},
		{".env\nx", false},
		{".env\r\nx", true},
	} {
		root := t.TempDir()
		if err := os.WriteFile(filepath.Join(root, c.name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		p := &enginePrep{src: NewSources(root)}
		err := p.hide((&artefact.EngineHide{Source: root, Target: "/w", Pattern: ".env*"}).String())
		if c.refuse {
			if err == nil || !strings.Contains(err.Error(), "refusing to start") {
				t.Errorf("%q: %v (argv %q), want a refusal", c.name, err, p.out)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.name, err)
			continue
		}
		if len(p.out) != 2 {
			t.Fatalf("%q: argv %q", c.name, p.out)
		}
		m, err := artefact.ParseMount(p.out[1])
		if err != nil || m.Target != "/w/"+c.name {
			t.Errorf("%q: the mask's --mount %q reads as target %q (%v)", c.name, p.out[1], m.Target, err)
		}
	}
}
