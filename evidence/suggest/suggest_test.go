package suggest

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/allowlist"
)

// TestEdit: each layout of each format gets the entries where they are
// written, in the layout, every other byte kept; the result loads and
// allows them (PatchFile checks).
func TestEdit(t *testing.T) {
	for _, c := range []struct {
		name, file, src, want string
	}{
		{"cue multi-line list with comments", "p.cue", `version: "v1"
// head comment
servers: github: {
	image: "x:1"
	network: allow: [
		"api.github.com:443", // GRANT: the API
	]
	limits: memory: "1g"
}
`, `version: "v1"
// head comment
servers: github: {
	image: "x:1"
	network: allow: [
		"api.github.com:443", // GRANT: the API
		"api.github.com:22",
		"evil.test:443",
	]
	limits: memory: "1g"
}
`},
		{"cue multi-line list, no trailing comma", "p.cue", "version: \"v1\"\nservers: github: {\n\timage: \"x:1\"\n\tnetwork: allow: [\n\t\t\"a.test:443\"\n\t]\n}\n",
			"version: \"v1\"\nservers: github: {\n\timage: \"x:1\"\n\tnetwork: allow: [\n\t\t\"a.test:443\",\n\t\t\"api.github.com:22\",\n\t\t\"evil.test:443\",\n\t]\n}\n"},
		{"cue one-line list", "p.cue", "version: \"v1\"\nservers: \"github\": {\n\timage: \"x:1\"\n\tnetwork: {allow: [\"a.test:443\"]} // GRANT\n}\n",
			"version: \"v1\"\nservers: \"github\": {\n\timage: \"x:1\"\n\tnetwork: {allow: [\"a.test:443\", \"api.github.com:22\", \"evil.test:443\"]} // GRANT\n}\n"},
		{"cue no network", "p.cue", "version: \"v1\"\nservers: {\n\tgithub: {\n\t\timage: \"x:1\"\n\t\tmounts: [\n\t\t\t{source: \".\", target: \"/w\"},\n\t\t] // GRANT\n\t}\n\tother: {image: \"y:1\"}\n}\n",
			"version: \"v1\"\nservers: {\n\tgithub: {\n\t\timage: \"x:1\"\n\t\tmounts: [\n\t\t\t{source: \".\", target: \"/w\"},\n\t\t] // GRANT\n\t\tnetwork: allow: [\"api.github.com:22\", \"evil.test:443\"]\n\t}\n\tother: {image: \"y:1\"}\n}\n"},
		{"cue network none", "p.cue", "version: \"v1\"\nservers: github: {\n\timage: \"x:1\"\n\tnetwork: \"none\" // for now\n}\n",
			"version: \"v1\"\nservers: github: {\n\timage: \"x:1\"\n\tnetwork: allow: [\"api.github.com:22\", \"evil.test:443\"] // for now\n}\n"},
		{"cue entry already there, spelled otherwise", "p.cue", "version: \"v1\"\nservers: github: {\n\timage: \"x:1\"\n\tnetwork: allow: [\"EVIL.test.:443\"]\n}\n",
			"version: \"v1\"\nservers: github: {\n\timage: \"x:1\"\n\tnetwork: allow: [\"EVIL.test.:443\", \"api.github.com:22\"]\n}\n"},
		{"json pretty", "p.json", "{\n  \"version\": \"v1\",\n  \"servers\": {\n    \"github\": {\n      \"image\": \"x:1\",\n      \"network\": {\n        \"allow\": [\n          \"a.test:443\"\n        ]\n      }\n    }\n  }\n}\n",
			"{\n  \"version\": \"v1\",\n  \"servers\": {\n    \"github\": {\n      \"image\": \"x:1\",\n      \"network\": {\n        \"allow\": [\n          \"a.test:443\",\n          \"api.github.com:22\",\n          \"evil.test:443\"\n        ]\n      }\n    }\n  }\n}\n"},
		{"json no network", "p.json", "{\n  \"version\": \"v1\",\n  \"servers\": {\n    \"github\": {\n      \"image\": \"x:1\"\n    }\n  }\n}\n",
			"{\n  \"version\": \"v1\",\n  \"servers\": {\n    \"github\": {\n      \"image\": \"x:1\",\n      \"network\": {\"allow\": [\"api.github.com:22\", \"evil.test:443\"]}\n    }\n  }\n}\n"},
		{"json one line, none", "p.json", `{"version": "v1", "servers": {"github": {"image": "x:1", "network": "none"}}}`,
			`{"version": "v1", "servers": {"github": {"image": "x:1", "network": {"allow": ["api.github.com:22", "evil.test:443"]}}}}`},
		{"yaml block list", "p.yaml", "version: v1\nservers:\n  github:\n    image: x:1\n    network:\n      allow:\n        - a.test:443 # GRANT\n    limits:\n      memory: 1g\n",
			"version: v1\nservers:\n  github:\n    image: x:1\n    network:\n      allow:\n        - a.test:443 # GRANT\n        - \"api.github.com:22\"\n        - \"evil.test:443\"\n    limits:\n      memory: 1g\n"},
		{"yaml flow list", "p.yml", "version: v1\nservers:\n  github:\n    image: x:1\n    network: {allow: [a.test:443, 'b.test:443']}\n",
			"version: v1\nservers:\n  github:\n    image: x:1\n    network: {allow: [a.test:443, 'b.test:443', \"api.github.com:22\", \"evil.test:443\"]}\n"},
		{"yaml no network", "p.yaml", "version: v1\nservers:\n  github:\n    image: x:1\n    mounts:\n    - source: .\n      target: /w\n\n  other:\n    image: y:1\n",
			"version: v1\nservers:\n  github:\n    image: x:1\n    mounts:\n    - source: .\n      target: /w\n    network:\n      allow:\n        - \"api.github.com:22\"\n        - \"evil.test:443\"\n\n  other:\n    image: y:1\n"},
		{"yaml none", "p.yaml", "version: v1\nservers:\n  github:\n    image: x:1\n    network: none\n",
			"version: v1\nservers:\n  github:\n    image: x:1\n    network: {allow: [\"api.github.com:22\", \"evil.test:443\"]}\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := PatchFile(c.file, []byte(c.src), "github", []string{"api.github.com:22", "evil.test:443"}, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if string(p.New) != c.want {
				t.Errorf("got:\n%s\nwant:\n%s\ndiff:\n%s", p.New, c.want, p.Diff(c.file))
			}
		})
	}
}

func TestEditRefuses(t *testing.T) {
	for _, c := range []struct{ file, src, want string }{
		{"p.jsonnet", "{}", "a Jsonnet policy is a program"},
		{"p.cue", "version: \"v1\"\nservers: other: {image: \"x\"}\n", `no server "github"`},
		{"p.cue", "version: \"v1\"\nservers: github: {image: \"x\", network: allow: [\"a.test:1\", ...]}\n", "open"},
	} {
		if _, err := Edit(c.file, []byte(c.src), "github", []string{"evil.test:443"}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %q: %v, want an error containing %q", c.file, c.src, err, c.want)
		}
	}
}

// TestRead: one entry per denied host:port, sorted; nothing for a private
// answer, an upstream failure, a refused connection, or a private address
// not named; an address named is suggested; what the list allows now is
// skipped.
func TestRead(t *testing.T) {
	log := `{"time":"t","action":"allow","method":"CONNECT","host":"api.github.com","port":443,"addr":"140.82.112.6","rule":"api.github.com:443","bytesUp":1,"bytesDown":1}
{"time":"t","action":"deny","method":"CONNECT","host":"evil.test","port":443,"reason":"not in the allowlist","denied":"not-in-allowlist","suggest":"*.test:443","bytesUp":0,"bytesDown":0}
{"time":"t","action":"deny","method":"GET","host":"evil.test","port":443,"reason":"not in the allowlist","bytesUp":0,"bytesDown":0}
{"time":"t","action":"deny","method":"CONNECT","host":"api.github.com","port":22,"reason":"not in the allowlist","bytesUp":0,"bytesDown":0}
{"time":"t","action":"deny","method":"CONNECT","host":"a.test","port":8443,"reason":"not in the allowlist","bytesUp":0,"bytesDown":0}
{"time":"t","action":"deny","method":"GET","host":"old.test","port":80,"reason":"not in the allowlist","bytesUp":0,"bytesDown":0}
{"time":"t","action":"deny","method":"GET","host":"rebind.test","port":80,"rule":"rebind.test:80","reason":"rebind.test resolves to the private address 127.0.0.1","bytesUp":0,"bytesDown":0}
{"time":"t","action":"deny","method":"GET","host":"10.0.0.5","port":8080,"reason":"not in the allowlist","bytesUp":0,"bytesDown":0}
{"time":"t","action":"deny","method":"GET","host":"192.168.1.9","port":80,"reason":"not in the allowlist","bytesUp":0,"bytesDown":0}
{"time":"t","action":"deny","method":"GET","host":"up.test","port":80,"rule":"up.test:80","reason":"upstream: dial tcp: connection refused","bytesUp":0,"bytesDown":0}
{"time":"t","action":"deny","reason":"connection refused: pid 1, uid 2: not a process of the sandbox","bytesUp":0,"bytesDown":0}
server noise on stderr
{"time":"t","action":"log-full","reason":"the decision log reached its limit of 64m: later decisions are not logged","bytesUp":0,"bytesDown":0}
`
	allowed, _ := allowlist.Parse([]string{"old.test:80"})
	res, err := Read(strings.NewReader(log), Options{Private: []netip.Addr{netip.MustParseAddr("10.0.0.5")}, Allowed: allowed})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(res.Entries(), " "), "10.0.0.5:8080 a.test:8443 api.github.com:22 evil.test:443"; got != want {
		t.Errorf("entries %q, want %q", got, want)
	}
	if res.Add[3].Count != 2 || strings.Join(res.Add[3].Methods, ",") != "CONNECT,GET" {
		t.Errorf("evil.test:443: %+v", res.Add[3])
	}
	var skipped []string
	for _, s := range res.Skipped {
		skipped = append(skipped, s.Dest+" "+s.Denied)
	}
	if got, want := strings.Join(skipped, "; "), " not-the-sandbox; 192.168.1.9:80 not-in-allowlist; old.test:80 not-in-allowlist; rebind.test:80 private-address; up.test:80 upstream"; got != want {
		t.Errorf("skipped %q, want %q", got, want)
	}
	if res.Lines != 12 || res.Denials != 10 || res.Other != 1 || res.Full != 1 {
		t.Errorf("lines %d, denials %d, other %d, full %d", res.Lines, res.Denials, res.Other, res.Full)
	}
}

func TestUnified(t *testing.T) {
	a := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n"
	b := "1\n2\nX\n3\n4\n5\n6\n7\n8\n9\n10\n11\nY\n12\n"
	want := "--- a/f\n+++ b/f\n@@ -1,5 +1,6 @@\n 1\n 2\n+X\n 3\n 4\n 5\n@@ -9,4 +10,5 @@\n 9\n 10\n 11\n+Y\n 12\n"
	if got := Unified("f", []byte(a), []byte(b)); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if got := Unified("f", []byte("a"), []byte("a\nb")); got != "--- a/f\n+++ b/f\n@@ -1 +1,2 @@\n-a\n\\ No newline at end of file\n+a\n+b\n\\ No newline at end of file\n" {
		t.Errorf("no final newline: got:\n%s", got)
	}
}
