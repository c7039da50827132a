package compiler

import (
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
