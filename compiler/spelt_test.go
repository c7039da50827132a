package compiler

import (
	"strings"
	"testing"
)

// TestSourceRefusalsSpelt: a server that can write the folder holding a
// read-only source replaces the source with a symlink whose target holds
// an OSC 52 clipboard write, BEL and a screen clear; the refusal names the
// target spelt (compiler.fail), not as escapes a terminal would run. A
// protected name at the top of a read-write mount, made a symlink there,
// is named spelt too.
func TestSourceRefusalsSpelt(t *testing.T) {
	const target = "/x\x1b]52;c;cHduZWQ=\x07\x1b[2J"
	for _, c := range []struct {
		name, mount string
		files       []string
		want        string
	}{
		{"replaced ro source", `{source: "work", target: "/w", mode: "rw"}, {source: "work/sub", target: "/w/sub"}`,
			[]string{"work/sub -> " + target},
			`${PROJECT_ROOT}/work/sub is a symlink to /x\x1b]52;c;cHduZWQ=\x07\x1b[2J (a link is followed`},
		{"protected symlink", `{source: "work", target: "/w", mode: "rw"}`,
			[]string{"work/.env -> " + target},
			`${PROJECT_ROOT}/work/.env is a symlink to /x\x1b]52;c;cHduZWQ=\x07\x1b[2J (if you did not make it`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := compileWith(t, Options{}, `version: "v1"
servers: s: {image: "x", mounts: [`+c.mount+`]}`, c.files...)
			if err == nil {
				t.Fatal("compiled; want the symlink refused")
			}
			if strings.ContainsAny(err.Error(), "\x1b\x07") {
				t.Errorf("the error holds ESC or BEL:\n%q", err.Error())
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v\nwant an error containing %q", err, c.want)
			}
			if !strings.Contains(err.Error(), "\n\thint: ") {
				t.Errorf("the hint's own line break is gone: %q", err.Error())
			}
		})
	}
}
