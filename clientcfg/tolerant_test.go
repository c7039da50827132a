package clientcfg

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler/lint"
	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/schema"
)

// readLint writes src as name in a fresh folder and reads it with ReadLint.
func readLint(t *testing.T, name, src string) (string, []*readback.Target, []lint.Note, error) {
	t.Helper()
	file := filepath.Join(t.TempDir(), filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	ts, notes, err := ReadLint(file, Options{Home: "/home/me"})
	return file, ts, notes, err
}

// textAt is the original text at a position, up to the line's end.
func textAt(src string, p schema.Pos) string {
	lines := strings.Split(src, "\n")
	if p.Line < 1 || p.Line > len(lines) || p.Col < 1 || p.Col > len(lines[p.Line-1])+1 {
		return fmt.Sprintf("<no %d:%d>", p.Line, p.Col)
	}
	return lines[p.Line-1][p.Col-1:]
}

// TestTolerantRead: configs as people publish them are read with a PARSE
// note at each repair, and every position (the entry, the flags, the
// notes) is one in the file as written, after bytes were inserted before it.
func TestTolerantRead(t *testing.T) {
	for _, c := range []struct {
		name, file, src string
		notes           []string // "line:col: a word of the message"
		servers         []string
	}{
		{"fragment", "claude_desktop_config.json",
			"\"mcpServers\": {\n  \"fs\": {\"command\": \"npx\", \"args\": [\"-y\", \"@modelcontextprotocol/server-filesystem\", \"/Users/me\"]}\n}\n",
			[]string{"1:1: a fragment"}, []string{"fs"}},
		{"fragment with a trailing comma", "claude_desktop_config.json",
			"\n  \"mcpServers\": {\n    \"fs\": {\"command\": \"npx\", \"args\": [\"-y\", \"pkg\"]}\n  },\n",
			[]string{"2:3: a fragment"}, []string{"fs"}},
		{"fragment of entries", "claude_desktop_config.json",
			"\"github\": {\"command\": \"docker\", \"args\": [\"run\", \"-i\", \"--rm\", \"-e\", \"GITHUB_TOKEN\", \"ghcr.io/github/github-mcp-server\"]}\n",
			[]string{"1:1: a fragment", "1:1: no \"mcpServers\" key"}, []string{"github"}},
		{"opening brace missing", "claude_desktop_config.json",
			"  \"mcpServers\": {\"a\": {\"command\": \"uvx\", \"args\": [\"mcp-server-fetch\"]}}\n}\n",
			[]string{"1:3: the { that opens the file is missing"}, []string{"a"}},
		{"# comment lines", "claude_desktop_config.json",
			"# Claude Desktop\n# paste into claude_desktop_config.json\n{\"mcpServers\": {\n  # the filesystem server\n  \"fs\": {\"command\": \"npx\", \"args\": [\"-y\", \"pkg\"]} # end\n}}\n",
			[]string{"1:1: 2 # comment lines", "4:3: # comment", "5:51: # comment"}, []string{"fs"}},
		{"// comments and trailing commas, plain JSON client", "claude_desktop_config.json",
			"{\n  // servers\n  \"mcpServers\": {\n    \"a\": {\"command\": \"uvx\", \"args\": [\"x\",],},\n  },\n}\n",
			[]string{"2:3: // comment", "4:41: trailing comma", "4:43: trailing comma", "4:45: trailing comma", "5:4: trailing comma"}, []string{"a"}},
		{"// comments and trailing commas, VS Code", ".vscode/mcp.json",
			"{\n  // servers\n  \"servers\": {\n    \"a\": {\"command\": \"uvx\", \"args\": [\"x\",],},\n  },\n}\n",
			nil, []string{"a"}},
		{"/* */ comment", ".cursor/mcp.json",
			"{\"mcpServers\": /* mine */ {\"a\": {\"command\": \"uvx\"}}}",
			[]string{"1:16: /* */ comment"}, []string{"a"}},
		{"closing brace missing", "claude_desktop_config.json",
			"{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"npx\", \"args\": [\"-y\", \"pkg\"]}\n  }\n",
			[]string{"1:1: this { is never closed"}, []string{"a"}},
		{"extra closing brace", "claude_desktop_config.json",
			"{\"mcpServers\": {\"a\": {\"command\": \"npx\"}}}\n}\n",
			[]string{"2:1: an extra }"}, []string{"a"}},
		{"Windows backslashes", "claude_desktop_config.json",
			"{\"mcpServers\": {\"fs\": {\"command\": \"C:\\Program Files\\nodejs\\npx.cmd\", \"args\": [\"-y\", \"pkg\", \"C:\\Users\\me\\\", \"D:\\data\"]}}}\n",
			[]string{"1:35: unescaped backslashes in \"C:\\Program Files", "1:92: unescaped backslashes in \"C:\\Users\\me\\\"", "1:108: unescaped backslashes in \"D:\\data\""}, []string{"fs"}},
		{"escaped backslashes are no repair", "claude_desktop_config.json",
			"{\"mcpServers\": {\"fs\": {\"command\": \"C:\\\\Program Files\\\\nodejs\\\\npx.cmd\", \"args\": [\"\\\\\\\\server\\\\share\", \"line\\nbreak\"]}}}\n",
			nil, []string{"fs"}},
		{"flat mcp.servers", "settings.json",
			"{\n  \"editor.fontSize\": 14,\n  \"mcp.servers\": {\n    \"a\": {\"command\": \"npx\", \"args\": [\"-y\", \"pkg\"]}\n  }\n}\n",
			[]string{"3:3: the flat key \"mcp.servers\""}, []string{"a"}},
		{"Markdown fence", "claude_desktop_config.json",
			"```json\n{\"mcpServers\": {\"a\": {\"command\": \"uvx\"}}}\n```\n",
			[]string{"1:1: Markdown code fence", "3:1: Markdown code fence"}, []string{"a"}},
		{"an entry of the wrong shape is skipped", "claude_desktop_config.json",
			"{\"mcpServers\": {\"bad\": {\"command\": \"npx\", \"args\": \"-y pkg\"}, \"good\": {\"command\": \"uvx\"}}}\n",
			[]string{"1:51: mcpServers.bad.args must be an array"}, []string{"good"}},
		{"everything at once", "claude_desktop_config.json",
			"# from the README\n\"mcpServers\": {\n  \"fs\": {\n    \"command\": \"npx\",\n    \"args\": [\"-y\", \"@modelcontextprotocol/server-filesystem\", \"C:\\Users\\me\\Documents\"],\n  },\n",
			[]string{"1:1: # comment", "2:1: a fragment", "2:15: this { is never closed", "5:63: unescaped backslashes", "5:87: trailing comma"}, []string{"fs"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			file, ts, notes, err := readLint(t, c.file, c.src)
			if err != nil {
				t.Fatalf("not read: %v\n%s", err, c.src)
			}
			var got []string
			for _, n := range notes {
				if n.Pos.File != file {
					t.Errorf("note in %q", n.Pos.File)
				}
				got = append(got, fmt.Sprintf("%d:%d: %s", n.Pos.Line, n.Pos.Col, n.Msg))
				if n.Unread != strings.Contains(n.Msg, "not linted") {
					t.Errorf("note %q: Unread %v", n.Msg, n.Unread)
				}
			}
			if len(got) != len(c.notes) {
				t.Errorf("notes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.notes, "\n"))
			} else {
				for i, w := range c.notes {
					if !strings.HasPrefix(got[i], w[:strings.Index(w, ": ")+2]) || !strings.Contains(got[i], w[strings.Index(w, ": ")+2:]) {
						t.Errorf("note %d: %q, want %q", i, got[i], w)
					}
				}
			}
			var servers []string
			for _, tg := range ts {
				servers = append(servers, tg.Server)
				// The entry's key, and each flag, are where the file says so.
				if at := textAt(c.src, tg.Pos); !strings.HasPrefix(at, `"`+tg.Server+`"`) {
					t.Errorf("%s: entry at %d:%d, which holds %q", tg.Server, tg.Pos.Line, tg.Pos.Col, at)
				}
				for _, fl := range tg.Flags {
					if at := textAt(c.src, fl.Pos); !strings.HasPrefix(at, `"`) {
						t.Errorf("%s: flag %s at %d:%d, which holds %q", tg.Server, fl.Kind, fl.Pos.Line, fl.Pos.Col, at)
					}
				}
			}
			if !slices.Equal(servers, c.servers) {
				t.Errorf("servers %q, want %q", servers, c.servers)
			}
		})
	}
}

// TestTolerantValues: a repaired string holds what was written.
func TestTolerantValues(t *testing.T) {
	src := "{\"mcpServers\": {\"fs\": {\"command\": \"C:\\Program Files\\nodejs\\npx.cmd\", \"args\": [\"C:\\Users\\me\\\", \".\\bin\", \"\\\\\\\\srv\\share\", \"C:\\\\ok\\\\done\"]}}}\n"
	file := filepath.Join(t.TempDir(), "claude_desktop_config.json")
	os.WriteFile(file, []byte(src), 0o644)
	var tol tolerance
	root, err := tol.parseJSON(file, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	servers, _ := root.get("mcpServers")
	fs, _ := servers.get("fs")
	cmd, _ := fs.get("command")
	args, _ := fs.get("args")
	got := []string{cmd.str}
	for _, a := range args.elems {
		got = append(got, a.str)
	}
	want := []string{`C:\Program Files\nodejs\npx.cmd`, `C:\Users\me\`, `.\bin`, `\\srv\share`, `C:\ok\done`}
	if !slices.Equal(got, want) {
		t.Errorf("values %q, want %q", got, want)
	}
}

// TestTolerantUnreadable: what cannot be repaired is an error at its
// position in the file as written, after the repairs before it.
func TestTolerantUnreadable(t *testing.T) {
	for _, c := range []struct{ name, src, at, msg string }{
		{"missing comma", "{\"mcpServers\": {\"a\": {\"command\": \"npx\" \"args\": []}}}", "1:40", "after object value"},
		{"missing comma after a repair", "# x\n\"mcpServers\": {\"a\": {\"command\": \"C:\\npx\" \"args\": []}}", "2:42", "after object value"},
		{"two braces missing", "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"npx\"}\n", "2:17", "2 brackets are never closed"},
		{"prose", "Add this to your config:\n{\"mcpServers\": {}}", "1:1", "invalid"},
		{"empty", "", "1:1", "an empty file: no server to lint"},
		{"blank", "\xef\xbb\xbf\n  \n", "1:1", "an empty file"},
		{"not an object", "[\"a\"]", "1:1", "the top level must be an object"},
	} {
		t.Run(c.name, func(t *testing.T) {
			file, ts, notes, err := readLint(t, "claude_desktop_config.json", c.src)
			se, ok := err.(*schema.Error)
			if !ok || ts != nil || notes != nil {
				t.Fatalf("err %v (%T), targets %v, notes %v", err, err, ts, notes)
			}
			if at := fmt.Sprintf("%d:%d", se.Pos.Line, se.Pos.Col); se.Pos.File != file || at != c.at || !strings.Contains(se.Msg, c.msg) {
				t.Errorf("error at %s %s: %q, want %s %q", se.Pos.File, at, se.Msg, c.at, c.msg)
			}
		})
	}
}

// FuzzTolerantJSON: the repairs never panic, every position they give is in
// the file as written, and a file JSON(C) reads as it is is read the same.
func FuzzTolerantJSON(f *testing.F) {
	for _, s := range []string{
		"\"mcpServers\": {\"a\": {\"command\": \"C:\\x\\\", \"args\": [\"a\",]}}",
		"# c\n{\"a\": [1, 2,\n", "```\n{}\n```", "{\"a\": \"\\u12\"}", "}", "\"k\": \"v\\\"", "{\"a\": {}}}",
		"{\"mcpServers\": {\"a\": {\"command\": \"npx\", \"args\": [\"C:\\\\ok\", \"line\\nbreak\"]}}}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		var tol tolerance
		root, err := tol.parseJSON("f.json", []byte(src))
		lines := strings.Count(src, "\n") + 1
		check := func(p schema.Pos) {
			if p.Line < 1 || p.Line > lines || p.Col < 1 {
				t.Fatalf("position %d:%d outside the file (%d lines):\n%q", p.Line, p.Col, lines, src)
			}
		}
		if err != nil {
			if se, ok := err.(*schema.Error); ok && se.Pos.Line != 0 {
				check(se.Pos)
			}
			return
		}
		for _, n := range tol.notes {
			check(n.Pos)
		}
		var walk func(n *node)
		walk = func(n *node) {
			check(n.pos)
			for i := range n.keys {
				check(n.keyPos[i])
				walk(n.vals[i])
			}
			for _, e := range n.elems {
				walk(e)
			}
		}
		walk(root)
		if strict, err := parseJSON("f.json", []byte(src)); err == nil && len(tol.notes) == 0 && !reflect.DeepEqual(strict, root) {
			t.Fatalf("read differently from the strict reader:\n%q", src)
		}
	})
}
