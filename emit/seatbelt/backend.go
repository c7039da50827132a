package seatbelt

import (
	"path/filepath"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
)

// Seatbelt is macOS's sandbox profile as a backend.
var Seatbelt emit.Backend = backend{}

type backend struct{}

func (backend) Name() string                            { return Backend }
func (backend) EnvFile() bool                           { return false }
func (backend) Builds() string                          { return Backend }
func (backend) Enforcement(p *compiler.Plan) []emit.Row { return Enforcement(p) }
func (backend) HostEnv() []string                       { return nil }

func (backend) Check(p *compiler.Plan) error {
	_, err := Build(p)
	return err
}

// Artefacts: the profile, the sandbox-exec arguments for review, and the
// wrapper entries run.
func (backend) Artefacts(p *compiler.Plan, out string) ([]emit.File, error) {
	base := Backend + "/" + p.Server
	pr, err := Build(p)
	if err != nil {
		return nil, err
	}
	args, err := Args(p, pr, compiler.Placeholders{}, "${PROJECT_ROOT}/"+out+"/"+base+".sb")
	if err != nil {
		return nil, err
	}
	sh, err := Wrapper(p, pr, "../..")
	if err != nil {
		return nil, err
	}
	return []emit.File{{Name: base + ".sb", Data: pr.Text(p)}, {Name: base + ".json", Data: emit.JSONArgs(args)}, {Name: base + ".sh", Data: sh}}, nil
}

// Entry: the shell wrapper, told the project root; it reads no env file.
func (backend) Entry(p *compiler.Plan, e emit.EntryEnv) (*emit.Command, error) {
	return &emit.Command{Path: "/bin/sh", Args: []string{e.Show(filepath.Join(e.Out, Backend, p.Server+".sh"))},
		Env: map[string]string{"PROJECT_ROOT": e.Root}}, nil
}
