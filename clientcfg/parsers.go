package clientcfg

import (
	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/emit/argv"
	"github.com/mcpolicy/mcpolicy/emit/bwrap"
	"github.com/mcpolicy/mcpolicy/emit/docker"
	"github.com/mcpolicy/mcpolicy/internal/position"
)

// The argv reverse parsers live beside their emitters (emit/docker,
// emit/bwrap); an entry is what they read into (argv.Entry).

func (e *entry) docker(engine string, cmd arg, args []arg) {
	docker.Parse(e, engine, toArgv(cmd), toArgvs(args))
}

func (e *entry) bwrap(cmd arg, args []arg) {
	bwrap.Parse(e, toArgv(cmd), toArgvs(args))
}

func toArgv(a arg) argv.Arg { return argv.Arg{S: a.s, Pos: a.pos} }

func toArgvs(as []arg) []argv.Arg {
	out := make([]argv.Arg, len(as))
	for i, a := range as {
		out[i] = toArgv(a)
	}
	return out
}

func (e *entry) Server() string                                       { return e.name }
func (e *entry) Target() *readback.Target                             { return e.t }
func (e *entry) Flag(k readback.FlagKind, v string, pos position.Pos) { e.flag(k, v, pos) }
func (e *entry) HostPath(raw string) compiler.HostPath                { return e.hostPath(raw) }
func (e *entry) LocalFile(raw string) string                          { return e.localFile(raw) }
func (e *entry) NotRead() string                                      { return e.notRead() }
func (e *entry) Secret(name, value string) bool                       { return looksLikeSecret(name, value) }
func (e *entry) Plumbing(name string) bool                            { return plumbing(name) }

func (e *entry) DangerousArgs(args []argv.Arg, onHost bool) {
	as := make([]arg, len(args))
	for i, a := range args {
		as[i] = arg{a.S, a.Pos}
	}
	e.dangerousArgs(as, onHost)
}

func (e *entry) DangerousEnv(name, value string, pos position.Pos) { e.dangerousEnv(name, value, pos) }

func (e *entry) EnvKeys() []argv.Arg {
	out := make([]argv.Arg, len(e.envKeys))
	for i, k := range e.envKeys {
		out[i] = argv.Arg{S: k.name, Pos: k.pos}
	}
	return out
}
