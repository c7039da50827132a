package compiler

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestCrossServer: a read-write grant of one server that holds what
// another runs or mounts is refused at the writer's mount, naming the
// other's grant, unless the writer accepts rw-holds-other-server.
func TestCrossServer(t *testing.T) {
	const victim = `victim: {command: ["/w/bin/victim"], mounts: [{source: "bin", target: "/w/bin"}]}`
	for _, tc := range []struct {
		name, src string
		files     []string
		want      string // "" for a policy that compiles
	}{
		{"program", `writer: {command: ["x"], mounts: [{source: ".", target: "/p", mode: "rw"}]}
	` + victim, []string{"bin/victim"},
			`mcpolicy.cue:3:37: servers.writer.mounts[0].source: read-write mount of "." holds the program of server "victim", ${PROJECT_ROOT}/bin/victim (mcpolicy.cue:4:2)`},
		{"nested", `writer: {command: ["x"], mounts: [{source: "bin", target: "/p", mode: "rw"}]}
	victim: {command: ["/w/tool/bin/v"], mounts: [{source: "bin/tool", target: "/w/tool"}]}`, []string{"bin/tool/bin/v"},
			`holds the program of server "victim", ${PROJECT_ROOT}/bin/tool/bin/v`},
		{"script", `writer: {command: ["x"], mounts: [{source: "scripts", target: "/p", mode: "rw"}]}
	victim: {command: ["/usr/bin/python3", "/s/serve.py"], mounts: [{source: "scripts/serve.py", target: "/s/serve.py"}]}`, []string{"scripts/serve.py"},
			`holds the script of server "victim", ${PROJECT_ROOT}/scripts/serve.py`},
		{"script relative to the workdir", `writer: {command: ["x"], mounts: [{source: "app", target: "/p", mode: "rw"}]}
	victim: {command: ["node", "index.js"], workdir: "/app", mounts: [{source: "app", target: "/app"}]}`, []string{"app/index.js"},
			`holds the script of server "victim", ${PROJECT_ROOT}/app/index.js`},
		{"mount source", `writer: {command: ["x"], mounts: [{source: "data", target: "/p", mode: "rw"}]}
	victim: {image: "v:1", mounts: [{source: "data/models", target: "/models"}]}`, []string{"data/models/"},
			`holds the mount source of server "victim", ${PROJECT_ROOT}/data/models (mcpolicy.cue:4:35)`},
		{"home-relative", `writer: {command: ["x"], mounts: [{source: "~/tools", target: "/p", mode: "rw"}]}
	victim: {command: ["/opt/v"], mounts: [{source: "~/tools/v", target: "/opt/v"}]}`, []string{"~/tools/v"},
			`holds the program of server "victim", ${HOME}/tools/v`},
		{"host program under an absolute grant", `writer: {command: ["x"], mounts: [{source: "@HOME@/opt", target: "/p", mode: "rw"}]}
	victim: {command: ["@HOME@/opt/v"], backends: ["bwrap"]}`, []string{"~/opt/v"},
			`holds the program of server "victim", @HOME@/opt/v`},
		{"accepted", `writer: {command: ["x"], mounts: [{source: ".", target: "/p", mode: "rw"}], accept: ["rw-holds-other-server"]}
	` + victim, []string{"bin/victim"}, ""},
		{"disjoint", `writer: {command: ["x"], mounts: [{source: "data", target: "/p", mode: "rw"}]}
	` + victim, []string{"bin/victim", "data/"}, ""},
		{"own grant", `victim: {command: ["/w/bin/victim"], mounts: [{source: "bin", target: "/w/bin", mode: "rw"}]}`, []string{"bin/victim"}, ""},
		{"protected entry", `writer: {command: ["x"], mounts: [{source: ".", target: "/p", mode: "rw"}]}
	victim: {image: "v:1", mounts: [{source: ".git", target: "/git"}]}`, []string{".git/"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			src := strings.ReplaceAll(tc.src, "@HOME@", home)
			_, root, err := compileWith(t, Options{Home: home}, "version: \"v1\"\nservers: {\n\t"+src+"\n}\n", tc.files...)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("compiled; want %q", tc.want)
			}
			msg := strings.ReplaceAll(strings.ReplaceAll(err.Error(), root+"/", ""), home, "@HOME@")
			if !strings.Contains(msg, tc.want) || !strings.Contains(msg, `accept: ["rw-holds-other-server"] on server "writer"`) {
				t.Fatalf("got:\n%s\nwant it to hold:\n%s", msg, tc.want)
			}
		})
	}
}

// TestProgramPins: a program or script that another server's read-write
// grant holds is listed for the entry to pin; one only its own grant
// holds, or no grant, is not; the pins change the plan's hash.
func TestProgramPins(t *testing.T) {
	plans, _, err := compileSrc(t, `version: "v1"
servers: {
	writer: {command: ["x"], mounts: [{source: ".", target: "/p", mode: "rw"}], accept: ["rw-holds-other-server"]}
	victim: {command: ["/w/bin/victim", "/w/bin/run.sh", "--flag", "/w/bin/none"], mounts: [{source: "bin", target: "/w/bin"}]}
	self: {command: ["/s/own"], mounts: [{source: "own", target: "/s", mode: "rw"}]}

	plain: {command: ["/usr/bin/env"], mounts: [{source: "ro", target: "/ro"}]}
}
`, "bin/victim", "bin/run.sh", "own/own", "ro/")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range plans {
		var ps []string
		for _, h := range p.ProgramPins {
			ps = append(ps, h.Placeholder())
		}
		got[p.Server] = strings.Join(ps, " ")
	}
	want := map[string]string{
		"victim": "${PROJECT_ROOT}/bin/run.sh ${PROJECT_ROOT}/bin/victim",
		"self":   "${PROJECT_ROOT}/own/own", "writer": "", "plain": "", // the writer holds own/
	}
	for s, w := range want {
		if got[s] != w {
			t.Errorf("%s pins %q, want %q", s, got[s], w)
		}
	}
	for _, p := range plans {
		h := p.Hash
		p.computeHash()
		if p.Hash != h {
			t.Errorf("%s: hash %s is not the plan's (%s)", p.Server, h, p.Hash)
		}
		if p.Server == "victim" {
			p.ProgramPins = nil
			if p.computeHash(); p.Hash == h {
				t.Errorf("the pins are not part of the plan's hash")
			}
		}
	}
}

// TestOthersWritable: each plan knows the read-write mount sources of
// the policy's other servers outside the project (for the bwrap wrapper's refusal of a
// launcher one of them could have written), not its own; they are not
// part of the plan's JSON or hash, and a plan read back has none.
func TestOthersWritable(t *testing.T) {
	home := t.TempDir()
	plans, _, err := compileWith(t, Options{Home: home}, `version: "v1"
servers: {
	a: {command: ["x"], mounts: [{source: "~/a", target: "/a", mode: "rw"}, {source: "data", target: "/d", mode: "rw"}, {source: "ro", target: "/ro"}], accept: ["rw-holds-other-server"]}
	b: {command: ["x"], mounts: [{source: "~/b", target: "/b", mode: "rw"}, {source: "~/a", target: "/a", mode: "rw"}], accept: ["rw-holds-other-server"]}
	c: {command: ["x"]}
}
`, "~/a/", "~/b/", "data/", "ro/")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range plans {
		var hs []string
		for _, h := range p.OthersWritable {
			hs = append(hs, h.Placeholder())
		}
		got[p.Server] = strings.Join(hs, " ")
	}
	want := map[string]string{
		"a": "${HOME}/a ${HOME}/b",
		"b": "${HOME}/a",
		"c": "${HOME}/a ${HOME}/b",
	}
	for s, w := range want {
		if got[s] != w {
			t.Errorf("%s: others' writable %q, want %q", s, got[s], w)
		}
	}
	for _, p := range plans {
		h, b := p.Hash, p.JSON()
		if p.computeHash(); p.Hash != h {
			t.Errorf("%s: the others' grants are part of the plan's hash", p.Server)
		}
		if strings.Contains(string(b), "${HOME}/b") && p.Server != "b" {
			t.Errorf("%s: the others' grants are in the plan's JSON:\n%s", p.Server, b)
		}
		q, err := DecodePlan(b)
		if err != nil {
			t.Fatal(err)
		}
		if q.OthersWritable != nil {
			t.Errorf("%s: a plan read back holds others' grants %v", p.Server, q.OthersWritable)
		}
	}
}

// TestCrossServerCode: the victim mounts the project read-only and runs
// code from it; the writer's read-write grant is a sub-folder. A grant
// that holds a file the victim runs, whatever its name, or lies in a
// folder it loads code from, is refused (#32).
func TestCrossServerCode(t *testing.T) {
	for _, tc := range []struct {
		name, grant, victim string
		files               []string
		want                string // "" for a policy that compiles
	}{
		// sh and node run their first operand whatever its name.
		{"sh script without extension", "app", `victim: {command: ["/bin/sh", "/w/app/run"], mounts: [{source: ".", target: "/w"}]}`,
			[]string{"app/run"}, `holds the script of server "victim", ${PROJECT_ROOT}/app/run (mcpolicy.cue:4:2)`},
		{"node script without extension", "app", `victim: {command: ["node", "/w/app/server"], mounts: [{source: ".", target: "/w"}]}`,
			[]string{"app/server"}, `holds the script of server "victim", ${PROJECT_ROOT}/app/server`},
		{"interpreter's operand not there yet", "app", `victim: {command: ["bash", "-x", "/w/app/later"], mounts: [{source: ".", target: "/w"}]}`,
			nil, `holds the script of server "victim", ${PROJECT_ROOT}/app/later`},
		{"executable argument", "app", `victim: {command: ["/w/bin/v", "--hook", "/w/app/hook"], mounts: [{source: ".", target: "/w"}]}`,
			[]string{"bin/v", "app/hook (x)"}, `holds the script of server "victim", ${PROJECT_ROOT}/app/hook`},
		{"shebang argument", "app", `victim: {command: ["/w/bin/v", "/w/app/hook"], mounts: [{source: ".", target: "/w"}]}`,
			[]string{"bin/v", "app/hook (#!)"}, `holds the script of server "victim", ${PROJECT_ROOT}/app/hook`},
		// python -m runs tool/__main__.py from the workdir.
		{"python -m from the workdir", "app", `victim: {command: ["python3", "-m", "tool"], workdir: "/w/app", mounts: [{source: ".", target: "/w"}]}`,
			[]string{"app/tool/__main__.py"}, `holds the workdir of server "victim", ${PROJECT_ROOT}/app`},
		{"grant inside the workdir", "app/tool", `victim: {command: ["python3", "-m", "tool"], workdir: "/w/app", mounts: [{source: ".", target: "/w"}]}`,
			[]string{"app/tool/__main__.py"}, `read-write mount of "app/tool" lies in the workdir of server "victim", ${PROJECT_ROOT}/app`},
		// The kernel follows bin -> app/bin in the sandbox.
		{"program through a symlinked folder", "app", `victim: {command: ["/w/bin/v"], mounts: [{source: ".", target: "/w"}]}`,
			[]string{"app/bin/v", "bin -> app/bin"}, `holds the program of server "victim", ${PROJECT_ROOT}/app/bin/v`},
		{"absolute link, read in the sandbox", "app", `victim: {command: ["/w/bin/v"], mounts: [{source: ".", target: "/w"}]}`,
			[]string{"app/bin/v", "bin -> /w/app/bin"}, `holds the program of server "victim", ${PROJECT_ROOT}/app/bin/v`},
		{"script path with =", "app", `victim: {command: ["python3", "/w/app/v=1/serve.py"], mounts: [{source: ".", target: "/w"}]}`,
			[]string{"app/v=1/serve.py"}, `holds the script of server "victim", ${PROJECT_ROOT}/app/v=1/serve.py`},
		{"option value", "app", `victim: {command: ["/w/bin/v", "--plugin=/w/app/p.js"], mounts: [{source: ".", target: "/w"}]}`,
			[]string{"bin/v", "app/p.js"}, `holds the script of server "victim", ${PROJECT_ROOT}/app/p.js`},
		// The script imports from its own folder (sys.path[0]).
		{"module the script imports", "srv/app", `victim: {command: ["python3", "/w/srv/server.py"], mounts: [{source: ".", target: "/w"}]}`,
			[]string{"srv/server.py", "srv/app/__init__.py"}, `read-write mount of "srv/app" lies in the folder of the script of server "victim", ${PROJECT_ROOT}/srv`},
		// Data the victim is handed, and a grant beside its code: not code.
		{"data file", "data", `victim: {command: ["/w/bin/v", "--db", "/w/data/app.db", "/w/data/notes"], mounts: [{source: ".", target: "/w"}]}`,
			[]string{"bin/v", "data/app.db", "data/notes/"}, ""},
		{"beside the code", "data", `victim: {command: ["python3", "/w/srv/server.py"], workdir: "/w/srv", mounts: [{source: ".", target: "/w"}]}`,
			[]string{"srv/server.py", "data/"}, ""},
		{"python -c", "app", `victim: {command: ["python3", "-c", "print(1)", "/w/app/x"], mounts: [{source: ".", target: "/w"}]}`,
			[]string{"app/x"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := "version: \"v1\"\nservers: {\n\twriter: {command: [\"x\"], mounts: [{source: \"" + tc.grant + "\", target: \"/p\", mode: \"rw\"}]}\n\t" + tc.victim + "\n}\n"
			files := append([]string{tc.grant + "/"}, tc.files...)
			_, root, err := compileWith(t, Options{}, src, files...)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("compiled; want %q", tc.want)
			}
			msg := strings.ReplaceAll(err.Error(), root+"/", "")
			if !strings.Contains(msg, tc.want) || !strings.Contains(msg, `mcpolicy.cue:3:37: servers.writer.mounts[0].source`) || !strings.Contains(msg, `accept: ["rw-holds-other-server"] on server "writer"`) {
				t.Fatalf("got:\n%s\nwant it to hold:\n%s", msg, tc.want)
			}
		})
	}
}

// TestCrossServerHeld: spellings of the same folder that the refusal sees
// through.
func TestCrossServerHeld(t *testing.T) {
	for _, tc := range []struct{ name, src string }{
		{"absolute grant, relative victim", `writer: {command: ["x"], mounts: [{source: "@ROOT@/bin", target: "/p", mode: "rw"}]}
	victim: {command: ["/w/bin/victim"], mounts: [{source: "bin", target: "/w/bin"}]}`},
		{"dot-dot in the program", `writer: {command: ["x"], mounts: [{source: "bin", target: "/p", mode: "rw"}]}
	victim: {command: ["/w/x/../bin/victim"], mounts: [{source: ".", target: "/w"}]}`},
		{"grant through a symlinked folder", `writer: {command: ["x"], mounts: [{source: "lnk", target: "/p", mode: "rw"}]}
	victim: {command: ["/w/bin/victim"], mounts: [{source: "bin", target: "/w/bin"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := compileWith(t, Options{}, "version: \"v1\"\nservers: {\n\t"+tc.src+"\n}\n", "bin/victim", "lnk -> bin")
			if err == nil {
				t.Fatal("compiled")
			}
			t.Log(err)
		})
	}
}

// TestProgramPinsCode: under an accepted grant, every file the victim
// runs is pinned whatever its name: an interpreter's extension-less
// operand, a program reached through a symlink (its real file, and the
// path as written when the writer holds the link: the launcher refuses
// that one, so the entry cannot be written until it is run by its real
// path).
func TestProgramPinsCode(t *testing.T) {
	plans, _, err := compileSrc(t, `version: "v1"
servers: {
	writer: {command: ["x"], mounts: [{source: "app", target: "/p", mode: "rw"}], accept: ["rw-holds-other-server"]}
	noext: {command: ["/bin/sh", "/w/app/run"], mounts: [{source: ".", target: "/w"}]}
	linked: {command: ["/w/bin/v"], mounts: [{source: ".", target: "/w"}]}
	linkheld: {command: ["/w/app/l/v"], mounts: [{source: ".", target: "/w"}]}
}
`, "app/run", "real/v", "app/bin/v", "bin -> app/bin", "app/l -> ../real")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range plans {
		var ps []string
		for _, h := range p.ProgramPins {
			ps = append(ps, h.Placeholder())
		}
		got[p.Server] = strings.Join(ps, " ")
	}
	want := map[string]string{
		"noext":    "${PROJECT_ROOT}/app/run",
		"linked":   "${PROJECT_ROOT}/app/bin/v",
		"linkheld": "${PROJECT_ROOT}/app/l/v", // real/v is no grant's
	}
	for s, w := range want {
		if got[s] != w {
			t.Errorf("%s pins %q, want %q", s, got[s], w)
		}
	}
}

// TestUseIndexNear: the index names every use a grant holds or lies in
// (within either way, for folders code is loaded from), in plan and use
// order, as comparing the grant with every use does.
func TestUseIndexNear(t *testing.T) {
	paths := []string{"/", "/a", "/a/b", "/a/b/c", "/a-b", "/a/bc", "/ab", "/b", "/b/a", "data", "data/x", "/a/b/c/d"}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		uses := make([][]used, 1+rng.IntN(5))
		for b := range uses {
			for range rng.IntN(6) {
				uses[b] = append(uses[b], used{abs: paths[rng.IntN(len(paths))], dir: rng.IntN(2) == 0})
			}
		}
		idx := indexUses(uses)
		for _, held := range paths {
			var want []useRef
			for b, us := range uses {
				for k, u := range us {
					if within(u.abs, held) || u.dir && within(held, u.abs) {
						want = append(want, useRef{b, k})
					}
				}
			}
			got := slices.Compact(idx.near(held))
			if !slices.Equal(got, want) {
				t.Fatalf("round %d, held %s: near %v, want %v (uses %v)", round, held, got, want, uses)
			}
		}
	}
}
