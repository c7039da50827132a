package registry

import (
	"errors"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/backendtraits"
	"github.com/mcpolicy/mcpolicy/schema"
)

// TestRegistry: names are unique, and a backend that runs another's
// artefacts names one that builds its own.
func TestRegistry(t *testing.T) {
	seen := map[string]bool{}
	for _, b := range All() {
		if seen[b.Name()] {
			t.Errorf("backend %q is registered twice", b.Name())
		}
		seen[b.Name()] = true
		base, err := Lookup(b.Builds())
		if err != nil || base.Builds() != base.Name() {
			t.Errorf("backend %q runs %q's artefacts, which is not a backend that builds its own", b.Name(), b.Builds())
		}
	}
	if _, err := Lookup("firejail"); err == nil || !strings.Contains(err.Error(), "unknown backend") {
		t.Errorf("Lookup of an unknown backend: %v", err)
	}
}

// TestTableAgrees: package backendtraits, which the compiler and the client
// readers use before any emitter runs, lists exactly the registered
// backends, under the same names, running the same artefacts, and of the
// same kind: a backend refuses a server without an image if and only if
// the table says it runs an image, and one without a command otherwise.
func TestTableAgrees(t *testing.T) {
	if !slices.Equal(backendtraits.Names(), Names()) {
		t.Errorf("the backend table lists %v, the registry %v (in report order)", backendtraits.Names(), Names())
	}
	for _, b := range All() {
		if got := backendtraits.Builds(b.Name()); got != b.Builds() {
			t.Errorf("backend %q runs %q's artefacts, the table says %q's", b.Name(), b.Builds(), got)
		}
		rt := b.Runtime()
		if got := strings.TrimPrefix(path.Base("/"+rt.Program), "/"); got != backendtraits.Program(b.Name()) {
			t.Errorf("backend %q starts its sandbox with %q, the table says client entries do with %q", b.Name(), rt.Program, backendtraits.Program(b.Name()))
		}
		if base, err := Lookup(b.Builds()); err != nil || base.Runtime().Sandbox != rt.Sandbox {
			t.Errorf("backend %q runs %q's artefacts in another kind of sandbox", b.Name(), b.Builds())
		}
		if (rt.Sandbox == artefact.Engine) != (rt.Engine != artefact.EngineTraits{}) {
			t.Errorf("backend %q: engine traits %+v for sandbox kind %d", b.Name(), rt.Engine, rt.Sandbox)
		}
		if host := b.PathModel() != emit.MountsAtTargets; host != backendtraits.HostPaths(b.Name()) {
			t.Errorf("backend %q: the server names host paths: %v; the table says %v", b.Name(), host, backendtraits.HostPaths(b.Name()))
		}
		image := refuses(b, &compiler.Plan{Server: "s", Command: []string{"/bin/true"}}, "a server without an image")
		host := refuses(b, &compiler.Plan{Server: "s", Image: "img:1"}, "a server without a command")
		if image == host || image != backendtraits.RunsImage(b.Name()) {
			t.Errorf("backend %q: refuses a server without an image: %v, without a command: %v; the table says it runs an image: %v",
				b.Name(), image, host, backendtraits.RunsImage(b.Name()))
		}
	}
}

// refuses reports whether b's Check refuses p for the restriction.
func refuses(b emit.Backend, p *compiler.Plan, restriction string) bool {
	p.User = compiler.User{UID: 1000, GID: 1000}
	p.Network = compiler.Network{Mode: "none"}
	p.Hash = "sha256:00"
	var ne *emit.NotEnforceableError
	return errors.As(b.Check(p), &ne) && ne.Restriction == restriction
}

// TestSchemaAgrees: a policy may list exactly the backends the registry
// has but the client-side ones: each builds its own artefacts, or runs
// another's (podman, docker's) and is listed so a server runs under it.
func TestSchemaAgrees(t *testing.T) {
	m := regexp.MustCompile(`backends\?: \[\.\.\.\(([^)]*)\)\]`).FindStringSubmatch(string(schema.Source()))
	if m == nil {
		t.Fatal("no backends enum in the schema")
	}
	var inSchema []string
	for _, q := range strings.Split(m[1], "|") {
		inSchema = append(inSchema, strings.Trim(strings.TrimSpace(q), `"`))
	}
	var built []string
	for _, b := range All() {
		built = append(built, b.Name())
	}
	slices.Sort(inSchema)
	slices.Sort(built)
	if !slices.Equal(inSchema, built) {
		t.Errorf("the schema allows backends %v, the registry has %v", inSchema, built)
	}
}
