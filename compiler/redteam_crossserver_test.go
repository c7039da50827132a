package compiler

import (
	"strings"
	"testing"
)

// TestRedteamCrossServer: a read-write grant of one server that holds
// code another server runs, yet compiles without rw-holds-other-server
// and without a pin (#32). The victim mounts the project read-only (a
// server that reads the code, and runs its own tool from it); the
// writer has a read-write sub-folder. Each case is a hole while it
// compiles.
func TestRedteamCrossServer(t *testing.T) {
	for _, tc := range []struct {
		name, victim string
		files        []string
	}{
		// A script without one of scriptExt's extensions: sh, python and
		// node run it all the same.
		{"sh script without extension", `victim: {command: ["/bin/sh", "/w/app/run"], mounts: [{source: ".", target: "/w"}]}`,
			[]string{"app/run"}},
		{"node script without extension", `victim: {command: ["node", "/w/app/server"], mounts: [{source: ".", target: "/w"}]}`,
			[]string{"app/server"}},
		// python -m runs app/tool/__main__.py from the workdir.
		{"python -m from the workdir", `victim: {command: ["python3", "-m", "tool"], workdir: "/w/app", mounts: [{source: ".", target: "/w"}]}`,
			[]string{"app/tool/__main__.py"}},
		// The program's path passes through a symlink (bin -> app/bin)
		// into the writer's grant: the compiler compares the path as
		// written, the kernel runs what the link reaches.
		{"program through a symlinked folder", `victim: {command: ["/w/bin/v"], mounts: [{source: ".", target: "/w"}]}`,
			[]string{"app/bin/v", "bin -> app/bin"}},
		// A command word with "=" is skipped as an option's value.
		{"script path with =", `victim: {command: ["python3", "/w/app/v=1/serve.py"], mounts: [{source: ".", target: "/w"}]}`,
			[]string{"app/v=1/serve.py"}},
		// The script is outside the grant; the module it imports (from
		// its own folder, sys.path[0]) is inside.
		{"module the script imports", `victim: {command: ["python3", "/w/srv/server.py"], mounts: [{source: ".", target: "/w"}]}`,
			[]string{"srv/server.py", "srv/app/__init__.py"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			writerGrant := "app"
			if tc.name == "module the script imports" {
				writerGrant = "srv/app"
			}
			src := "version: \"v1\"\nservers: {\n\twriter: {command: [\"x\"], mounts: [{source: \"" + writerGrant + "\", target: \"/p\", mode: \"rw\"}]}\n\t" + tc.victim + "\n}\n"
			plans, _, err := compileWith(t, Options{}, src, tc.files...)
			if err != nil {
				if strings.Contains(err.Error(), "rw-holds-other-server") {
					return // refused: held
				}
				t.Fatalf("refused for another reason: %v", err)
			}
			for _, p := range plans {
				if p.Server == "victim" && len(p.ProgramPins) > 0 {
					t.Logf("compiled, but pins %v", p.ProgramPins)
					return
				}
			}
			t.Errorf("compiled, no pin: server \"writer\" writes what \"victim\" runs next, with victim's grants")
		})
	}
}

// TestRedteamCrossServerHeld: spellings of the same folder that the
// refusal sees through (these hold).
func TestRedteamCrossServerHeld(t *testing.T) {
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
