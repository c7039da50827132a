package compiler

import (
	"fmt"
	"strings"
	"testing"
)

// TestHide: hidden paths reach the plan sorted and once each, with their
// positions, counted as subtractions and never as grants; explain lists
// them; a plan without hide has no "hide" or "hidden" key (its hash is
// what it was before the field existed).
func TestHide(t *testing.T) {
	const src = `version: "v1"
servers: s: {
	command: ["/usr/bin/true"]
	backends: ["bwrap"]
	mounts: [{source: ".", target: "/w",
		hide: ["secrets", ".env*", "config/*.pem", ".env*"]}]
}
`
	plans, _, err := compileSrc(t, src, "secrets/", "config/")
	if err != nil {
		t.Fatal(err)
	}
	p := plans[0]
	m := p.Mounts[0]
	if got := strings.Join(m.Hide, " "); got != ".env* config/*.pem secrets" {
		t.Errorf("hide %q, want sorted and once each", got)
	}
	if len(m.HidePos) != 3 || m.HidePos[0].Line != 6 || m.HidePos[0].Col != 21 || m.HidePos[2].Col != 10 {
		t.Errorf("positions %v", m.HidePos)
	}
	if p.Subtractions.Hidden != 3 || len(p.Grants()) != 1 {
		t.Errorf("hidden %d, grants %+v", p.Subtractions.Hidden, p.Grants())
	}
	if e := Explain(p); !strings.Contains(e, "/w/.env*  hidden (EACCES)  (") || !strings.Contains(e, "hidden paths: 3 inside the mounts") {
		t.Errorf("explain does not list them:\n%s", e)
	}
	for rel, want := range map[string]string{".env": ".env*", ".env.local/x": ".env*", "config/a.pem": "config/*.pem", "config/sub/a.pem": "", // the pattern's folder only, no recursion

		"secrets/k/l": "secrets", "a.pem": "", "config": "", "secretsx": "", "src/.env": ""} {
		if got, _ := m.Hides(rel); got != want {
			t.Errorf("Hides(%q) = %q, want %q", rel, got, want)
		}
	}
	without, _, err := compileSrc(t, strings.Replace(src, `hide: ["secrets", ".env*", "config/*.pem", ".env*"]`, "", 1))
	if err != nil {
		t.Fatal(err)
	}
	if j := string(without[0].JSON()); strings.Contains(j, `"hide"`) || strings.Contains(j, `"hidden"`) || without[0].Hash == p.Hash {
		t.Errorf("without hide: hash %s (with: %s); JSON:\n%s", without[0].Hash, p.Hash, j)
	}
}

// TestHideRefusals: each bad hidden path is refused at its own position,
// with the field and a hint.
func TestHideRefusals(t *testing.T) {
	many := make([]string, MaxHide+1)
	for i := range many {
		many[i] = fmt.Sprintf("%q", fmt.Sprintf("f%d", i))
	}
	for _, c := range []struct {
		mount string
		files []string
		want  string
	}{
		{`{source: ".", target: "/w", hide: ["ok", "a/[b"]}`, nil, `mcpolicy.cue:5:52: servers.s.mounts[0].hide[1]: hidden path "a/[b": the pattern is malformed`},
		{`{source: "f.txt", target: "/w/f.txt", hide: [".env"]}`, []string{"f.txt"}, `mcpolicy.cue:5:56: servers.s.mounts[0].hide: host path "f.txt" is a file: nothing below it to hide`},
		{`{source: ".", target: "/w", hide: [` + strings.Join(many, ", ") + `]}`, nil, fmt.Sprintf(`mcpolicy.cue:5:39: servers.s.mounts[0].hide: %d hidden paths in one mount`, MaxHide+1)},
	} {
		src := "version: \"v1\"\nservers: s: {\n\tcommand: [\"/usr/bin/true\"]\n\tbackends: [\"bwrap\"]\n\tmounts: [" + c.mount + "]\n}\n"
		_, root, err := compileSrc(t, src, c.files...)
		if err == nil {
			t.Errorf("%s: compiled; want %s", c.mount, c.want)
			continue
		}
		msg := strings.ReplaceAll(err.Error(), root+"/", "")
		if !strings.Contains(msg, c.want) || !strings.Contains(msg, "hint: ") {
			t.Errorf("%s:\n got %s\nwant %s (and a hint)", c.mount, msg, c.want)
		}
	}
}

// TestHiddenTargets: a grant inside a hidden path is refused.
func TestHiddenTargets(t *testing.T) {
	const src = `version: "v1"
servers: s: {
	command: ["/usr/bin/true"]
	backends: ["bwrap"]
	mounts: [{source: ".", target: "/w", hide: ["secrets"]}, {source: "pub", target: "/w/secrets/pub"}]
}
`
	_, _, err := compileSrc(t, src, "secrets/", "pub/")
	if err == nil || !strings.Contains(err.Error(), `/w/secrets/pub lies in /w/secrets, which the mount at /w hides ("secrets")`) {
		t.Errorf("a mount inside a hidden path: %v", err)
	}
	if _, _, err := compileSrc(t, strings.Replace(src, "/w/secrets/pub", "/w/pub", 1), "secrets/", "pub/"); err != nil {
		t.Errorf("a mount beside the hidden path: %v", err)
	}
}

// TestReadableSecrets: explain's and client's warning names each secret a
// server with network can read, leaves hidden ones out, and says nothing
// for a server without network.
func TestReadableSecrets(t *testing.T) {
	const src = `version: "v1"
servers: s: {
	command: ["/usr/bin/true"]
	backends: ["bwrap"]
	mounts: [{source: ".", target: "/w", hide: ["keys"]}]
	network: allow: ["api.github.com:443"]
}
`
	plans, root, err := compileSrc(t, src, ".env", "keys/a.pem", "src/b.key", "node_modules/x/.env")
	if err != nil {
		t.Fatal(err)
	}
	m := Machine{ProjectRoot: root}
	var got []string
	for _, s := range ReadableSecrets(plans[0], m) {
		got = append(got, s.Rel+" "+s.Fix())
	}
	if s := strings.Join(got, ", "); s != `.env hide: [".env*"], src/b.key hide: ["src/b.key"]` {
		t.Errorf("readable secrets: %s", s)
	}
	if w := ReadableSecrets(plans[0], m)[0].Warning(plans[0]); !strings.Contains(w, `add hide: [".env*"] to the mount at /w (`) {
		t.Errorf("warning: %s", w)
	}
	none, root, err := compileSrc(t, strings.Replace(src, "\tnetwork: allow: [\"api.github.com:443\"]\n", "", 1), ".env")
	if err != nil {
		t.Fatal(err)
	}
	if s := ReadableSecrets(none[0], Machine{ProjectRoot: root}); len(s) != 0 {
		t.Errorf("network none: %+v", s)
	}
}

// TestHiddenWay (#42, red team): a server that can rename a folder on a
// hidden path's way (config in "config/*.pem") moves the hidden file out
// of the pattern's reach: the launcher finds no "config" at its next
// start and the file is readable as "config2/a.pem". Such a hide is
// refused; one whose folders are mount points (a fixed top level's
// entries, a mount's own root) or read-only is not.
func TestHiddenWay(t *testing.T) {
	files := []string{"app/config/", "app/config/a.pem", "config/a.pem", "src/conf/k/a.pem"}
	for _, c := range []struct {
		mounts string
		want   string // "" compiles
	}{
		// A read-write mount of a folder: config can be renamed.
		{`{source: "app", target: "/app", mode: "rw", hide: ["config/*.pem"]}`,
			`hidden path "config/*.pem": a server that can write /app can rename /app/config`},
		// The project root's fixed top level: config is a mount point,
		// but config/k below it is not.
		{`{source: ".", target: "/w", mode: "rw", hide: ["config/*.pem"]}`, ""},
		{`{source: ".", target: "/w", mode: "rw", hide: ["src/conf/k/*.pem"]}`,
			`can rename /w/src/conf`},
		// Read-only, but the folder lies in another read-write mount.
		{`{source: ".", target: "/w", hide: ["src/conf/*.pem"]}, {source: "src", target: "/w/src", mode: "rw"}`,
			`can rename /w/src/conf`},
		// Read-only, the folder a read-write mount's own root: not renamed.
		{`{source: ".", target: "/w", hide: ["src/conf/k/*.pem"]}, {source: "src/conf/k", target: "/w/src/conf/k", mode: "rw"}, {source: "src/conf", target: "/w/src/conf"}`, ""},
		{`{source: ".", target: "/w", hide: ["config/*.pem"]}`, ""},
		// The folder mounted on its own.
		{`{source: "app", target: "/app", mode: "rw"}, {source: "app/config", target: "/app/config", mode: "rw", hide: ["*.pem"]}`, ""},
	} {
		src := "version: \"v1\"\nservers: s: {\n\tcommand: [\"/usr/bin/true\"]\n\tbackends: [\"bwrap\"]\n\tmounts: [" + c.mounts + "]\n}\n"
		_, root, err := compileSrc(t, src, files...)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.mounts, err)
		case c.want != "" && err == nil:
			t.Errorf("%s: compiled; want %s", c.mounts, c.want)
		case c.want != "":
			msg := strings.ReplaceAll(err.Error(), root+"/", "")
			if !strings.Contains(msg, c.want) || !strings.Contains(msg, "hint: ") || !strings.Contains(msg, "mcpolicy.cue:5:") {
				t.Errorf("%s:\n got %s\nwant %s (at its position, with a hint)", c.mounts, msg, c.want)
			}
		}
	}
}

// TestHiddenElsewhere (#42, red team): a hidden path another mount shows
// without hiding it is readable there; refused, unless that mount hides
// it too or shows it at the masked place.
func TestHiddenElsewhere(t *testing.T) {
	files := []string{"app/.env", "app/secrets/k", "app/src/"}
	for _, c := range []struct {
		mounts string
		want   string
	}{
		{`{source: "app", target: "/app", hide: [".env"]}, {source: ".", target: "/w"}`,
			`hidden path ".env" of the mount at /app is readable through the mount at /w (/w/app/.env)`},
		// The field as the policy wrote it (the plan sorts mounts and hides).
		{`{source: ".", target: "/w"}, {source: "app", target: "/app", hide: ["a", ".env"]}`,
			`servers.s.mounts[1].hide[1]: hidden path ".env" of the mount at /app is readable through the mount at /w`},
		{`{source: "app", target: "/app", hide: ["secrets"]}, {source: "app/secrets", target: "/s"}`,
			`hidden path "secrets" of the mount at /app is readable through the mount at /s (/s)`},
		{`{source: "app", target: "/app", hide: [".env*"]}, {source: "app", target: "/b", mode: "rw"}`,
			`is readable through the mount at /b (/b/.env*)`},
		// Hidden there too, or shown at the masked place: the mask covers it.
		{`{source: "app", target: "/app", hide: [".env"]}, {source: ".", target: "/w", hide: ["app/.env"]}`, ""},
		{`{source: "app", target: "/app", hide: ["secrets"]}, {source: ".", target: "/w", hide: ["app/secrets"]}`, ""},
		// Hidden whole in one, in part in the other: the rest is readable.
		{`{source: "app", target: "/app", hide: ["secrets/k"]}, {source: ".", target: "/w", hide: ["app/secrets"]}`,
			`hidden path "app/secrets" of the mount at /w is readable through the mount at /app (/app/secrets)`},
		{`{source: ".", target: "/w"}, {source: "app", target: "/w/app", hide: [".env"]}`, ""},
		{`{source: "app", target: "/app", hide: [".env"]}, {source: "app/src", target: "/src", mode: "rw"}`, ""},
	} {
		src := "version: \"v1\"\nservers: s: {\n\tcommand: [\"/usr/bin/true\"]\n\tbackends: [\"bwrap\"]\n\tmounts: [" + c.mounts + "]\n}\n"
		_, root, err := compileSrc(t, src, files...)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.mounts, err)
		case c.want != "" && err == nil:
			t.Errorf("%s: compiled; want %s", c.mounts, c.want)
		case c.want != "":
			msg := strings.ReplaceAll(err.Error(), root+"/", "")
			if !strings.Contains(msg, c.want) || !strings.Contains(msg, "hint: ") {
				t.Errorf("%s:\n got %s\nwant %s (with a hint)", c.mounts, msg, c.want)
			}
		}
	}
}
