package why

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/runtime/probe"
)

// The question a probe's attempt asks of why, and how a verdict answers
// it: one mapping for everything that sets why beside the kernel (prove's
// rows, verify's differential test).

// ErrNoQuestion: why has nothing to say about the attempt's op (keyring).
var ErrNoQuestion = errors.New("no why question")

// ProbeTarget is the target to ask why about attempt a on a backend.
// A path (read, write, create, list) is asked as the server names it: a
// sandbox path under bwrap, docker and podman; a host path under a backend
// that does not remap (hostView: Landlock), but for its scratch, a tmpfs
// at the scratch's target. A unix socket is the host's, whatever the
// view: a host path. connect, udp and fetch are destinations; environ is
// a variable's name. Keyring has none: ErrNoQuestion.
func ProbeTarget(p *compiler.Plan, a probe.Attempt, hostView bool) (Target, error) {
	switch a.Op {
	case probe.Read, probe.Write, probe.Create, probe.List:
		kind := SandboxPath
		if s := p.Scratch; hostView && (s == nil || a.Target != s.Target && !strings.HasPrefix(a.Target, s.Target+"/")) {
			kind = HostPath
		}
		return Target{Raw: a.Target, Kind: kind, Path: a.Target}, nil
	case probe.Unix:
		return Target{Raw: a.Target, Kind: HostPath, Path: a.Target}, nil
	case probe.Connect, probe.UDP:
		host, port, err := net.SplitHostPort(a.Target)
		if err != nil {
			return Target{}, err
		}
		n, _ := strconv.Atoi(port)
		return Target{Raw: a.Target, Kind: Destination, Host: host, Port: n}, nil
	case probe.Fetch:
		u, err := url.Parse(a.Target)
		if err != nil {
			return Target{}, err
		}
		n, _ := strconv.Atoi(u.Port())
		return Target{Raw: a.Target, Kind: Destination, Host: u.Hostname(), Port: n}, nil
	case probe.Environ:
		return Target{Raw: a.Target, Kind: EnvName, Name: a.Target}, nil
	}
	return Target{}, fmt.Errorf("%w for op %s", ErrNoQuestion, a.Op)
}

// ProbeAllows reads v, the verdict on ProbeTarget's target, for the op:
// whether the attempt should succeed, and why says so in a few words
// ("readable", "not writable (read-only-mount)"). Read and list need Read;
// write and create need Write; a unix socket needs to be in view (Read:
// a read-only bind does not stop a connect); environ needs Passed. A
// connect or a datagram goes direct, around the proxy (why's Connect is
// through it): allowed unless why says a direct connection finds no
// route. A fetch goes through the proxy: allowed when why says Connect
// (a caller tells a fetch the plan gives no proxy apart itself).
func ProbeAllows(v Verdict, op probe.Op) (bool, string) {
	has := func(acc Access) bool {
		for _, x := range v.Access {
			if x == acc {
				return true
			}
		}
		return false
	}
	stops := func() string {
		var ss []string
		for _, s := range v.Stops {
			ss = append(ss, s.Rule)
		}
		return "(" + strings.Join(ss, ", ") + ")"
	}
	switch op {
	case probe.Read, probe.List:
		if has(Read) {
			return true, "readable"
		}
		return false, "not readable " + stops()
	case probe.Write, probe.Create:
		if has(Write) {
			return true, "writable"
		}
		return false, "not writable " + stops()
	case probe.Unix:
		if has(Read) {
			return true, "in view"
		}
		return false, "not in view " + stops()
	case probe.Environ:
		if has(Passed) {
			return true, "passed to the server"
		}
		return false, "not passed " + stops()
	case probe.Connect, probe.UDP:
		for _, s := range v.Stops {
			if s.Rule == StopDirect {
				return false, "no direct route"
			}
		}
		return true, "a direct route"
	case probe.Fetch:
		if has(Connect) {
			return true, "connects through the proxy"
		}
		return false, "refused by the proxy " + stops()
	}
	return false, "no why question for op " + string(op)
}
