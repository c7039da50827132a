package suggest

import (
	"os"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/toolpolicy"
)

// memoryTools is the tools section testdata/launch-tools.log was
// written under, now: read_graph has been allowed since.
var memoryTools = &toolpolicy.Policy{
	Server: "memory", PolicyFile: "mcpolicy.cue",
	Allow: []toolpolicy.Rule{{Pattern: "read_graph", Field: "servers.memory.tools.allow[0]"}, {Pattern: "search_*", Field: "servers.memory.tools.allow[1]"}, {Pattern: "read_file", Field: "servers.memory.tools.allow[2]"}},
	Deny:  []toolpolicy.Rule{{Pattern: "delete_*", Field: "servers.memory.tools.deny[0]"}},
	Args: []toolpolicy.ArgRule{
		{Tool: "read_file", Arg: "path", Field: "servers.memory.tools.args.read_file.path", Under: []string{"/workspace"}},
		{Tool: "search_nodes", Arg: "query", Field: "servers.memory.tools.args.search_nodes.query", MaxBytes: 256},
	},
}

// TestReadTools: from the launch log, the one tool refused by the allow
// list is proposed by its exact name (twice refused, once proposed); a
// deny is named with its field and pattern, never removed; each refused
// argument names its constraint and the one widening; a glob-like name,
// a malformed message, another server's lines and a tool allowed since
// are not proposed.
func TestReadTools(t *testing.T) {
	f, err := os.Open("testdata/launch-tools.log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := ReadTools(f, "memory", memoryTools)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(res.Names(), ","); got != "create_entities" || res.Allow[0].Count != 2 {
		t.Errorf("allow %+v, want create_entities twice", res.Allow)
	}
	if res.Launch != 12 || res.Decisions != 9 || res.Refused != 8 {
		t.Errorf("launch lines %d, decisions %d, refused %d; want 12, 9, 8", res.Launch, res.Decisions, res.Refused)
	}
	var notes []string
	for _, n := range res.Notes {
		notes = append(notes, n.Field+" | "+n.Tool+" | "+n.Say)
	}
	all := strings.Join(notes, "\n")
	for _, want := range []string{
		`servers.memory.tools.deny[0] | delete_entities | denied by servers.memory.tools.deny[0] ("delete_*"): suggest never removes a deny`,
		`servers.memory.tools.args.read_file.path | read_file | the path is not under servers.memory.tools.args.read_file.path.under ["/workspace"]: if the tool must reach it, add that one folder to under`,
		`servers.memory.tools.args.search_nodes.query | search_nodes | longer than servers.memory.tools.args.search_nodes.query.maxBytes (256): raise it only as far as the call needs`,
		`servers.memory.tools.allow | * | not a tool name suggest allows exactly`,
		`servers.memory.tools.allow[0] | read_graph | allowed now by servers.memory.tools.allow[0] ("read_graph"): the log is older than the policy`,
		` |  | not a call of a tool the policy can name (malformed message: unexpected end of JSON input)`,
		`servers.memory.tools.pin | read_graph | changed since its pin (description changed): review what the server shows now, then run ` + "`mcpolicy pin memory`",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no note %q in:\n%s", want, all)
		}
	}
	if strings.Contains(all, "other") || strings.Contains(all, "| x |") {
		t.Errorf("another server's decision was read:\n%s", all)
	}
	// With a pin that does not hold create_entities, the name is the
	// client's invention: not proposed.
	pinned := *memoryTools
	pinned.Pin = &toolpolicy.Pin{Server: "memory", Tools: []toolpolicy.PinnedTool{{Name: "read_graph"}, {Name: "search_nodes"}}}
	f.Seek(0, 0)
	if res, _ := ReadTools(f, "memory", &pinned); len(res.Allow) != 0 {
		t.Errorf("a name the pin does not hold was proposed: %v", res.Names())
	}
	pinned.Pin.Tools = append(pinned.Pin.Tools, toolpolicy.PinnedTool{Name: "create_entities"})
	f.Seek(0, 0)
	if res, _ := ReadTools(f, "memory", &pinned); strings.Join(res.Names(), ",") != "create_entities" {
		t.Errorf("a pinned name was not proposed: %v", res.Names())
	}
	// No tools section now: nothing is proposed.
	f.Seek(0, 0)
	res, _ = ReadTools(f, "memory", nil)
	if len(res.Allow) != 0 {
		t.Errorf("with no tools section, proposed %v", res.Names())
	}
}

// TestEditToolsAllow: the exact names go into tools.allow as written, in
// each format's layout; the result loads and allows them.
func TestEditToolsAllow(t *testing.T) {
	for _, c := range []struct{ name, file, src, want string }{
		{"cue one line", "p.cue", "version: \"v1\"\nservers: memory: {\n\timage: \"x:1\"\n\ttools: {allow: [\"read_graph\"], deny: [\"delete_*\"]}\n}\n",
			"version: \"v1\"\nservers: memory: {\n\timage: \"x:1\"\n\ttools: {allow: [\"read_graph\", \"create_entities\"], deny: [\"delete_*\"]}\n}\n"},
		{"cue multi-line", "p.cue", "version: \"v1\"\nservers: memory: {\n\timage: \"x:1\"\n\ttools: allow: [\n\t\t\"read_graph\", // GRANT\n\t]\n}\n",
			"version: \"v1\"\nservers: memory: {\n\timage: \"x:1\"\n\ttools: allow: [\n\t\t\"read_graph\", // GRANT\n\t\t\"create_entities\",\n\t]\n}\n"},
		{"json", "p.json", "{\"version\": \"v1\", \"servers\": {\"memory\": {\"image\": \"x:1\", \"tools\": {\"allow\": [\"read_graph\"]}}}}\n",
			"{\"version\": \"v1\", \"servers\": {\"memory\": {\"image\": \"x:1\", \"tools\": {\"allow\": [\"read_graph\", \"create_entities\"]}}}}\n"},
		{"yaml block", "p.yaml", "version: v1\nservers:\n  memory:\n    image: x:1\n    tools:\n      allow:\n        - read_graph\n",
			"version: v1\nservers:\n  memory:\n    image: x:1\n    tools:\n      allow:\n        - read_graph\n        - \"create_entities\"\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := PatchToolsFile(c.file, []byte(c.src), "memory", []string{"create_entities"}, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if string(p.New) != c.want {
				t.Errorf("got:\n%s\nwant:\n%s", p.New, c.want)
			}
		})
	}
	// No tools section: not made (it would show every other tool).
	if _, err := EditToolsAllow("p.cue", []byte("version: \"v1\"\nservers: memory: image: \"x:1\"\n"), "memory", []string{"a"}); err == nil || !strings.Contains(err.Error(), "no tools.allow") {
		t.Errorf("a tools section was made: %v", err)
	}
	if _, err := PatchToolsFile("p.cue", []byte("version: \"v1\"\nservers: memory: {image: \"x:1\", tools: allow: [\"a\"]}\n"), "memory", []string{"b*"}, t.TempDir()); err == nil {
		t.Error("a glob was added")
	}
}
