package bwrap

import (
	"path/filepath"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
)

// Bwrap is bubblewrap as a backend.
var Bwrap emit.Backend = backend{}

type backend struct{}

func (backend) Name() string                            { return Backend }
func (backend) EnvFile() bool                           { return true }
func (backend) Builds() string                          { return Backend }
func (backend) Enforcement(p *compiler.Plan) []emit.Row { return Enforcement(p) }
func (backend) HostEnv() []string                       { return nil }

func (backend) Check(p *compiler.Plan) error {
	_, err := Args(p, compiler.Placeholders{}, Merged, 0)
	return err
}

// Artefacts: the launch spec mcpolicy-launch runs, and the shell wrapper.
func (backend) Artefacts(p *compiler.Plan, _ string) ([]emit.File, error) {
	base := Backend + "/" + p.Server
	spec, err := Spec(p)
	if err != nil {
		return nil, err
	}
	sh, err := Wrapper(p, "../..")
	if err != nil {
		return nil, err
	}
	return []emit.File{{Name: base + ".json", Data: spec}, {Name: base + ".sh", Data: sh}}, nil
}

// Entry: mcpolicy-launch runs the spec, pinned by its digest in the entry
// (which the server cannot write), with bwrap by absolute path.
func (backend) Entry(p *compiler.Plan, e emit.EntryEnv) (*emit.Command, error) {
	launcher, err := e.Launcher()
	if err != nil {
		return nil, err
	}
	spec, err := Spec(p)
	if err != nil {
		return nil, err
	}
	file := filepath.Join(e.Out, Backend, p.Server+".json")
	digest, err := e.Pin(file, spec)
	if err != nil {
		return nil, err
	}
	pins, err := emit.ProgramArgs(p, e)
	if err != nil {
		return nil, err
	}
	args := e.RootArgs()
	if !e.Portable { // a portable entry's launcher finds bwrap on PATH at spawn
		args = append(args, "--bwrap", e.Abs(Program))
	}
	args = append(append(args, "--sha256", digest), pins...)
	return &emit.Command{Path: launcher, Env: map[string]string{}, Args: append(args, e.Show(file))}, nil
}
