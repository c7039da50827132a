package why_test

import (
	"errors"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/evidence/why"
	"github.com/mcpolicy/mcpolicy/runtime/probe"
)

// The probe mapping: which question an attempt asks, and how a verdict
// answers it (prove's rows and verify's differential test share it).
func TestProbeTargetAndAllows(t *testing.T) {
	p := &compiler.Plan{Scratch: &compiler.Scratch{Target: "/tmp"}}
	for _, c := range []struct {
		op       probe.Op
		target   string
		hostView bool
		want     why.Target
	}{
		{probe.Read, "/workspace/a", false, why.Target{Raw: "/workspace/a", Kind: why.SandboxPath, Path: "/workspace/a"}},
		{probe.Create, "/home/u/p/a", true, why.Target{Raw: "/home/u/p/a", Kind: why.HostPath, Path: "/home/u/p/a"}},
		// Landlock's scratch is a tmpfs at its target: a sandbox path.
		{probe.List, "/tmp/x", true, why.Target{Raw: "/tmp/x", Kind: why.SandboxPath, Path: "/tmp/x"}},
		// A unix socket is the host's, whatever the view.
		{probe.Unix, "/tmp/s.sock", false, why.Target{Raw: "/tmp/s.sock", Kind: why.HostPath, Path: "/tmp/s.sock"}},
		{probe.Connect, "127.0.0.1:80", false, why.Target{Raw: "127.0.0.1:80", Kind: why.Destination, Host: "127.0.0.1", Port: 80}},
		{probe.Fetch, "https://example.com:8443/x", false, why.Target{Raw: "https://example.com:8443/x", Kind: why.Destination, Host: "example.com", Port: 8443}},
		{probe.Environ, "TOKEN", false, why.Target{Raw: "TOKEN", Kind: why.EnvName, Name: "TOKEN"}},
	} {
		got, err := why.ProbeTarget(p, probe.Attempt{Op: c.op, Target: c.target}, c.hostView)
		if err != nil || got != c.want {
			t.Errorf("%s %s: %+v %v, want %+v", c.op, c.target, got, err, c.want)
		}
	}
	if _, err := why.ProbeTarget(p, probe.Attempt{Op: probe.Keyring, Target: "k"}, false); !errors.Is(err, why.ErrNoQuestion) {
		t.Errorf("keyring: %v, want ErrNoQuestion", err)
	}

	ro := why.Verdict{Access: []why.Access{why.Read, why.Exec}, Stops: []why.Stop{{Rule: why.StopReadOnly}}}
	none := why.Verdict{Access: []why.Access{}, Stops: []why.Stop{{Rule: why.StopDirect}, {Rule: why.StopNetNone}}}
	passed := why.Verdict{Access: []why.Access{why.Passed}}
	for _, c := range []struct {
		v    why.Verdict
		op   probe.Op
		want bool
		says string
	}{
		{ro, probe.Read, true, "readable"},
		{ro, probe.List, true, "readable"},
		{ro, probe.Write, false, "not writable (read-only-mount)"},
		{ro, probe.Create, false, "not writable (read-only-mount)"},
		{ro, probe.Unix, true, "in view"},
		{none, probe.Connect, false, "no direct route"},
		{none, probe.Fetch, false, "refused by the proxy (direct-connection, network-none)"},
		{passed, probe.Environ, true, "passed to the server"},
		{ro, probe.Environ, false, "not passed (read-only-mount)"},
	} {
		if ok, says := why.ProbeAllows(c.v, c.op); ok != c.want || says != c.says {
			t.Errorf("%s on %+v: %v %q, want %v %q", c.op, c.v, ok, says, c.want, c.says)
		}
	}
}
