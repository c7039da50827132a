package findings

import (
	"bytes"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/position"
)

// TestSpelt: a finding a pass did not spell (a client file's drift, a
// diff's change naming a path) prints in no format with ESC or BEL, and a
// clean one prints as before.
func TestSpelt(t *testing.T) {
	f := Finding{Rule: "MOUNT_RW", Level: Error, Server: "s\x1b[2J", Pos: position.Pos{File: "p\x07.cue", Line: 1, Col: 1},
		Message: "mount /w/.env\x1b[32mG: ro -> rw", Waived: "x\x1b]52;c;cHduZWQ=\x07", Verdict: Widened, Against: position.Pos{File: "HEAD:p.cue", Line: 1, Col: 1}}
	for _, format := range Formats {
		got := write(t, format, f, Finding{Rule: "R", Level: Error, Message: "m\x1b[2J"})
		if bytes.ContainsAny([]byte(got), "\x1b\x07") {
			t.Errorf("--format %s writes ESC or BEL:\n%q", format, got)
		}
	}
	if got, want := write(t, "text", f), `p\x07.cue:1:1: s\x1b[2J WIDENED MOUNT_RW: mount /w/.env\x1b[32mG: ro -> rw (was HEAD:p.cue:1:1) [waived: x\x1b]52;c;cHduZWQ=\x07]`+"\n"; got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
