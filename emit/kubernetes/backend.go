package kubernetes

import (
	"fmt"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
)

// Kubernetes is the backend of the registry: it builds
// kubernetes/<server>.yaml with the default Options (a Pod, each mount a
// PersistentVolumeClaim, no hostPath).
var Kubernetes emit.Backend = backend{}

type backend struct{}

func (backend) Name() string                            { return Backend }
func (backend) Builds() string                          { return Backend }
func (backend) Enforcement(p *compiler.Plan) []emit.Row { return Enforcement(p) }
func (backend) Check(p *compiler.Plan) error            { return Check(p) }

// CheckAcross: the servers' objects share a namespace (emit.Across).
func (backend) CheckAcross(plans []*compiler.Plan) error { return CheckAcross(plans) }

// EnvFile: a cluster reads env grants from Secrets and ConfigMaps, never
// from a file the client names.
func (backend) EnvFile() bool { return false }

// HostEnv: nothing on this machine says where a cluster is (kubectl's
// context is the operator's, not the client's).
func (backend) HostEnv() []string { return nil }

func (backend) Artefacts(p *compiler.Plan, _ string) ([]emit.File, error) {
	return Artefacts(p, Options{})
}

// Entry: a server in a cluster is not started by a local client. A client
// entry could run `kubectl attach -i` to an applied Pod, but that attaches
// to one session of a Pod the operator applied (and restarts), with the
// operator's kubectl credentials on the client's machine: a choice for
// the operator, not for the client writer. The manifest's header and
// annotation say how to attach.
func (backend) Entry(p *compiler.Plan, _ emit.EntryEnv) (*emit.Command, error) {
	return nil, fmt.Errorf("server %q: backend %s runs in a cluster, not from a client entry: "+
		"apply .mcpolicy/%s/%s.yaml with kubectl, then reach the server with `%s` (or pick another backend for the client entry)",
		p.Server, Backend, Backend, p.Server, attachHint(p, Options{}, "pod/"+p.Server))
}
