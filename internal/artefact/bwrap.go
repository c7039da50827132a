package artefact

import "github.com/mcpolicy/mcpolicy/internal/backend"

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
}

// BwrapProgram is bubblewrap's executable, and the backend its specs
// name. The table's program for bwrap is its name (a test checks), so one
// constant serves as both.
const BwrapProgram = backend.Bwrap
