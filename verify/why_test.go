package verify

import (
	"fmt"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/evidence/why"
	"github.com/mcpolicy/mcpolicy/runtime/probe"
)

// TestWhyAgreesWithKernel: `mcpolicy why` (package why) against
// the kernel. The differential harness's generated cases run under each
// Linux backend with the harness's probe and attempts (the same generate,
// Expectations and backend runners as TestDifferential); every attempt is
// then asked of why — the path as the server names it, a destination, a
// connection around the proxy — and its verdict must be the kernel's
// answer. A backend why says refuses the plan must be one the harness
// predicts refuses it, and the other way round.
//
//	MCPOLICY_VERIFY_CASES=N   cases per backend, every backend runs them all
//	                          (default 24: the acceptance run is N=200)
func TestWhyAgreesWithKernel(t *testing.T) {
	setup(t)
	n, seed := casesAndSeed()
	if os.Getenv("MCPOLICY_VERIFY_CASES") == "" {
		n = 24
	}
	backends := []backendRun{bwrapBackend(""), landlockBackend(nil), engineBackend("docker", ""), engineBackend("podman", "")}
	// Each backend its own copy of the cases (they run in parallel), made
	// here one at a time.
	casesOf := map[string][]*testCase{}
	for _, b := range backends {
		for i := range n {
			casesOf[b.name] = append(casesOf[b.name], generateIn(t, seed, 30000+i, egressRandom, b.name))
		}
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			if !available(t, b.name) {
				return
			}
			cases := casesOf[b.name]
			start := time.Now()
			ran, refused, probes, dis := whyBackend(t, b, cases)
			for i, d := range dis {
				if i == 20 {
					t.Errorf("... and %d more", len(dis)-20)
					break
				}
				t.Error(d)
			}
			t.Logf("%s: %d cases (%d with an allowlist; %d refused at compile time, where why agreed), %d run under the kernel, %d probes compared, %d disagreements, %v",
				b.name, len(cases), countEgress(cases), refused, ran, probes, len(dis), time.Since(start).Round(time.Second))
		})
	}
}

// whyBackend runs every case under one backend, as verifyBackend does,
// and compares each result with why's verdict.
func whyBackend(t *testing.T, b backendRun, cases []*testCase) (ran, refused, probes int, dis []string) {
	var mu sync.Mutex
	sem := make(chan struct{}, 3)
	var wg sync.WaitGroup
	for _, c := range cases {
		m := whyMachine(c)
		// why's refusal is the backend's own Check; the harness predicts
		// it from the emitter: the two must agree.
		v, err := whyVerdict(c.plan, m, b, probe.Attempt{Op: probe.List, Target: "/"})
		if err != nil {
			t.Errorf("%s case %d: why: %v", b.name, c.n, err)
			continue
		}
		if (v.Refused != "") != b.refuses(c.plan) {
			dis = append(dis, fmt.Sprintf("%s case %d: why says refused=%v (%s), the harness predicts refused=%v", b.name, c.n, v.Refused != "", v.Refused, b.refuses(c.plan)))
		}
		if b.refuses(c.plan) {
			refused++
			continue
		}
		if c.egress() && b.noEgress {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func(c *testCase) {
			defer wg.Done()
			defer func() { <-sem }()
			es, rs, err := b.attempt(t, c)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("%s case %d: %v", b.name, c.n, err)
				return
			}
			ran++
			for i, e := range es {
				a := e.Attempt
				if rs[i].Attempt != a {
					t.Errorf("%s case %d: result %d is for %s:%s, want %s:%s", b.name, c.n, i, rs[i].Op, rs[i].Target, a.Op, a.Target)
					continue
				}
				want, says, err := whyWants(c.plan, m, b, a)
				if err != nil {
					t.Errorf("%s case %d: why %s: %v", b.name, c.n, a.Target, err)
					continue
				}
				probes++
				if !agrees(want, rs[i].Result) {
					dis = append(dis, fmt.Sprintf("%s case %d: %s %s: why says %s, kernel said %s", b.name, c.n, a.Op, a.Target, says, rs[i].Result))
				}
			}
		}(c)
	}
	wg.Wait()
	return ran, refused, probes, dis
}

// whyMachine is the case's machine for why: the harness's project and
// home, its file system, and the egress proxy's name table.
func whyMachine(c *testCase) why.Machine {
	m := why.Machine{Machine: c.machine(), Cwd: c.root, FS: true}
	if e := world.fixture.Egress; e != nil {
		m.Resolve = func(host string) ([]netip.Addr, error) {
			if a, ok := e.Hosts[host]; ok {
				return []netip.Addr{a}, nil
			}
			return nil, fmt.Errorf("%s: not in the harness's hosts table", host)
		}
	}
	return m
}

// whyVerdict asks why about one attempt on the backend, the question
// why.ProbeTarget makes of it: a path as the server names it (a sandbox
// path under bwrap, docker and podman; a host path under Landlock, which
// does not remap), or a destination.
func whyVerdict(p *compiler.Plan, m why.Machine, b backendRun, a probe.Attempt) (why.Verdict, error) {
	t, err := why.ProbeTarget(p, a, b.view == HostView)
	if err != nil {
		return why.Verdict{}, err
	}
	ans, err := why.Ask([]*compiler.Plan{p}, t, m, b.name)
	if err != nil {
		return why.Verdict{}, err
	}
	if len(ans.Servers) != 1 || len(ans.Servers[0].Backends) != 1 {
		return why.Verdict{}, fmt.Errorf("no verdict for backend %s", b.name)
	}
	return ans.Servers[0].Backends[0], nil
}

// whyWants maps why's verdict on an attempt (why.ProbeAllows) to the
// class of result the kernel must give: "ok" or a denial for paths and
// direct connections (only the proxy ever leads out), and for a fetch:
// "ok" when why says the proxy connects, "http 403" when the proxy
// refuses, an errno when the plan has no proxy at all (the fetch goes
// direct).
func whyWants(p *compiler.Plan, m why.Machine, b backendRun, a probe.Attempt) (want, says string, err error) {
	v, err := whyVerdict(p, m, b, a)
	if err != nil {
		return "", "", err
	}
	ok, says := why.ProbeAllows(v, a.Op)
	switch {
	case a.Op != probe.Fetch && ok:
		return WantOK, says, nil
	case a.Op != probe.Fetch:
		return "denied", says, nil
	case p.Network.Mode != "allowlist":
		return WantErrno, "no proxy: the fetch finds no route", nil
	case ok:
		return WantOK, says, nil
	}
	return WantProxyRefused, says, nil
}

// agrees compares why's class with the kernel's result.
func agrees(want, result string) bool {
	switch want {
	case "denied":
		return result != "ok"
	case WantOK:
		return result == "ok"
	}
	return Class(result) == want
}
