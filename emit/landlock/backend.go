package landlock

import (
	"path/filepath"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/internal/hostcaps"
)

// Landlock is the Landlock ruleset as a backend.
var Landlock emit.Backend = backend{}

type backend struct{}

func (backend) Name() string      { return Backend }
func (backend) EnvFile() bool     { return true }
func (backend) Builds() string    { return Backend }
func (backend) HostEnv() []string { return nil }

// Enforcement depends on this machine's kernel.
func (backend) Enforcement(p *compiler.Plan) []emit.Row {
	return Enforcement(p, hostcaps.Detect())
}

func (backend) Check(p *compiler.Plan) error {
	_, err := Build(p, compiler.Placeholders{})
	return err
}

func ruleset(p *compiler.Plan) ([]byte, error) {
	rs, err := Build(p, compiler.Placeholders{})
	if err != nil {
		return nil, err
	}
	return rs.JSON(), nil
}

// Artefacts: the ruleset mcpolicy-launch applies.
func (backend) Artefacts(p *compiler.Plan, _ string) ([]emit.File, error) {
	data, err := ruleset(p)
	if err != nil {
		return nil, err
	}
	return []emit.File{{Name: Backend + "/" + p.Server + ".json", Data: data}}, nil
}

// Entry: mcpolicy-launch applies the ruleset, pinned by its digest in the
// entry (which the server cannot write).
func (backend) Entry(p *compiler.Plan, e emit.EntryEnv) (*emit.Command, error) {
	launcher, err := e.Launcher()
	if err != nil {
		return nil, err
	}
	data, err := ruleset(p)
	if err != nil {
		return nil, err
	}
	file := filepath.Join(e.Out, Backend, p.Server+".json")
	digest, err := e.Pin(file, data)
	if err != nil {
		return nil, err
	}
	pins, err := emit.ProgramArgs(p, e)
	if err != nil {
		return nil, err
	}
	args := append(append(append([]string{}, e.RootArgs()...), "--sha256", digest), pins...)
	return &emit.Command{Path: launcher, Env: map[string]string{}, Args: append(args, e.Show(file))}, nil
}
