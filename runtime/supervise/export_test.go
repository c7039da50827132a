package supervise

import (
	"time"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit/registry"
)

// StartProxy starts the egress proxy of plan p as Run does, but no
// sandbox: the test names the sandbox's process with trust. With
// checkPeers false every connection is admitted (the control case).
func StartProxy(p *compiler.Plan, o Options, checkPeers bool) (socket string, trust func(pid, uid int), stop func(), err error) {
	if o.StartTimeout == 0 {
		o.StartTimeout = 10 * time.Second
	}
	s := &session{plan: p, opt: o, machine: o.Machine, checkPeers: checkPeers}
	if b, err := registry.Lookup(o.Backend); err == nil {
		s.rt = b.Runtime()
	}
	if err := s.startProxy(); err != nil {
		s.cleanup()
		return "", nil, nil, err
	}
	return s.machine.EgressSocket, s.sandbox.set, s.cleanup, nil
}

// ForwarderBeside is forwarderBinary for an mcpolicy at exe.
var ForwarderBeside = forwarderBeside
