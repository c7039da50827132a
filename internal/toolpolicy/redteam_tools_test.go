package toolpolicy

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestRedTeamCaseFoldedArgs (red team): Go's encoding/json, which servers
// built on mcp-go decode with, reads "PATH" and "Path" as "path" (and
// "ſ" as "s", the Kelvin sign as "k"). An argument the relay reads as
// absent, or a second value a server reads last, would carry a path the
// under constraint never saw.
func TestRedTeamCaseFoldedArgs(t *testing.T) {
	p := &Policy{
		Server: "fs", PolicyFile: "mcpolicy.cue",
		Allow: []Rule{{Pattern: "read_file", Field: "servers.fs.tools.allow[0]"}},
		Args: []ArgRule{
			{Tool: "read_file", Arg: "path", Field: "servers.fs.tools.args.read_file.path", Under: []string{"/workspace"}},
			{Tool: "read_file", Arg: "mask", Field: "servers.fs.tools.args.read_file.mask", Enum: []string{"a"}},
		},
	}
	// What a case-insensitive server reads: the attack's premise.
	var server struct {
		Path string `json:"path"`
		Mask string `json:"mask"`
	}
	if err := json.Unmarshal([]byte(`{"PATH":"/etc/passwd","maſk":"b"}`), &server); err != nil ||
		server.Path != "/etc/passwd" || server.Mask != "b" {
		t.Fatalf("encoding/json no longer folds keys (%+v, %v): the attack below is moot, keep the test anyway", server, err)
	}
	for _, args := range []string{
		`{"PATH":"/etc/passwd"}`,
		`{"Path":"/etc/passwd"}`,
		`{"pat\u0048":"/etc/passwd"}`,
		`{"path":"/workspace/a","PATH":"/etc/passwd"}`,
		`{"PATH":"/etc/passwd","path":"/workspace/a"}`,
		`{"path":"/workspace/a","maſk":"b"}`,            // long s folds to s
		`{"path":"/workspace/a","mas\u212a":"b"}`,       // Kelvin sign folds to k
		`{"path":"/workspace/a","mask":"a","MASK":"b"}`, // named twice up to case
	} {
		r := p.CheckCall("read_file", json.RawMessage(args))
		if r == nil {
			t.Errorf("read_file %s passed: a case-insensitive server reads a value the constraint never checked", args)
			continue
		}
		if !strings.Contains(r.Reason, "ignores case") {
			t.Errorf("read_file %s refused for another reason: %+v", args, r)
		}
	}
	// Keys no constraint names pass, whatever their case.
	if r := p.CheckCall("read_file", json.RawMessage(`{"path":"/workspace/a","Other":1,"tail":2}`)); r != nil {
		t.Errorf("an unconstrained key refused: %+v", r)
	}
}

// TestRedTeamObjectKeysFold (red team): ObjectKeys refuses what a parser
// ignoring case reads as one member twice, or as a member it knows.
func TestRedTeamObjectKeysFold(t *testing.T) {
	for _, c := range []struct {
		raw   string
		known []string
	}{
		{`{"name":"a","Name":"b"}`, nil},
		{`{"name":"a","N\u0041ME":"b"}`, nil},
		{`{"NAME":"b"}`, []string{"name"}},
		{`{"paramſ":{}}`, []string{"params"}},
		{`{"ID":1}`, []string{"id"}},
	} {
		if _, err := ObjectKeys(json.RawMessage(c.raw), c.known...); err == nil {
			t.Errorf("ObjectKeys(%s, %q) read it", c.raw, c.known)
		}
	}
	if m, err := ObjectKeys(json.RawMessage(`{"name":"a","nextCursor":"x"}`), "name", "nextCursor"); err != nil || len(m) != 2 {
		t.Errorf("exact keys refused: %v %v", m, err)
	}
	if FoldKey("nextCursor") != FoldKey("NEXTCURSOR") || FoldKey("ſ") != FoldKey("s") || FoldKey("\u212a") != FoldKey("k") {
		t.Error("FoldKey does not fold as encoding/json does")
	}
}

// TestRedTeamPathForms (red team): the spellings of a path a server may
// resolve outside the folder while the relay reads it inside. The relay
// is lexical (docs/tools.md): "..", "//" and "/." are cleaned; a file:
// URL, which a server may read as the path it names, is refused; "\" and
// "%2e" are file name characters on the Linux backends.
func TestRedTeamPathForms(t *testing.T) {
	r := ArgRule{Tool: "read_file", Arg: "path", Field: "f", Under: []string{"/workspace"}, Workdir: "/workspace"}
	for _, c := range []struct {
		path string
		ok   bool
	}{
		{"/workspace/a", true},
		{"/workspace/.", true},
		{"//workspace//a", true},
		{"/workspace/../etc/passwd", false},
		{"/workspace/a/../../etc/passwd", false},
		{"a/../../etc/passwd", false},
		{"../workspace2/x", false},
		{"/workspace2/x", false},
		{"//etc/passwd", false},
		{"/./etc/passwd", false},
		{"~/x", false},
		{"~root/x", false},
		{"file:///etc/passwd", false},
		{"FILE:///etc/passwd", false},
		{"file:/etc/passwd", false},
		{"file://localhost/etc/passwd", false},
		{"/workspace/a\x00/../../etc", false},
		{"..\\..\\etc\\passwd", true},      // one name in /workspace, on Linux
		{"%2e%2e/%2e%2e/etc/passwd", true}, // a name, not decoded by the filesystem servers
		{"/workspace/%2e%2e/etc", true},
	} {
		b, _ := json.Marshal(c.path)
		got := r.check(b) == ""
		if got != c.ok {
			t.Errorf("under /workspace, %q passes = %v, want %v (%s)", c.path, got, c.ok, r.check(b))
		}
	}
}
