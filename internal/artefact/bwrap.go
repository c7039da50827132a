package artefact

import "github.com/mcpolicy/mcpolicy/internal/backendtraits"

// BwrapSpec is the committed bwrap artefact (.mcpolicy/bwrap/SERVER.json)
// that client entries start through the launcher: bwrap's arguments with
// host paths as ${PROJECT_ROOT}/… and ${HOME}/…, and the names of the
// variables passed through (values never enter the file or any argv).
type BwrapSpec struct {
	Backend string   `json:"backend"` // BwrapProgram
	Server  string   `json:"server"`
	Plan    string   `json:"plan"`
	Env     []string `json:"env"`
	// Unprotected are the protected names the policy unprotects: in a
	// read-write mount of the project they stay writable.
	Unprotected []string `json:"unprotected,omitempty"`
	Args        []string `json:"args"`
	// ProgramPins are the files the server runs that a read-write grant
	// holds (placeholders): the entry must pin each (ProgramFlag).
	ProgramPins []string `json:"programPins,omitempty"`
	// Tools is "sha256:HEX" of the server's tool-surface artefact
	// (ToolsPath): the launcher runs the relay on the stdio pipe with those
	// bytes alone. Empty: the policy has no tools section, no relay.
	Tools string `json:"tools,omitempty"`
}

// BwrapProgram is bubblewrap's executable, and the backend its specs
// name. The table's program for bwrap is its name (a test checks), so one
// constant serves as both.
const BwrapProgram = backendtraits.Bwrap

// bwrapOperands is how many values each option a bwrap spec may hold
// takes. The bwrap emitter writes no other (golden/contract_test.go), and
// the launcher refuses an option not listed rather than guess.
var bwrapOperands = map[string]int{
	"--unshare-all": 0, "--unshare-user": 0, "--disable-userns": 0, "--die-with-parent": 0,
	"--new-session": 0, "--clearenv": 0, "--uid": 1, "--gid": 1, "--cap-drop": 1, "--setenv": 2,
	"--proc": 1, "--dev": 1, "--ro-bind": 2, "--ro-bind-try": 2, "--bind": 2, "--symlink": 2,
	"--size": 1, "--tmpfs": 1, "--remount-ro": 1, "--chdir": 1,
	// Launcher-only: SOURCE TARGET PATTERN, a hidden path below a mount,
	// expanded and masked at spawn (bwrap itself has no such option).
	BwrapHideOp: 3,
}

// BwrapHideOp is the launcher-only operation of a bwrap spec that hides
// the paths below a mount's SOURCE (at TARGET) matching PATTERN: the
// launcher expands it at spawn and masks each match. A launcher that
// does not know it refuses the spec.
const BwrapHideOp = "--mcpolicy-hide"

// BwrapOperands reports how many values a bwrap spec's option takes, and
// whether the contract knows it at all.
func BwrapOperands(option string) (n int, known bool) {
	n, known = bwrapOperands[option]
	return n, known
}
