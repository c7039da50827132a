// Package docker emits `docker run` arguments for a plan. The same arguments
// run unchanged under `podman run`: where the engines differ (podman mounts
// writable tmpfs on /run, /tmp and /var/tmp under --read-only; docker leaves
// /dev/shm writable) the emitter says explicitly what both must do.
package docker

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/bytesize"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/internal/artefact/sandbox"
	"github.com/mcpolicy/mcpolicy/internal/backendtraits"
)

// Backend is the name used in artefact paths and messages.
const Backend = backendtraits.Docker

// LabelPlan carries the plan hash on the container, to tell which plan a
// running container was started from.
const LabelPlan = "org.mcpolicy.plan"

// maskedDirs are writable on one engine or the other under --read-only;
// an empty read-only tmpfs over each makes them read-only on both.
var maskedDirs = []string{"/dev/shm", "/run", "/tmp", "/var/tmp"}

// maskOpts are the options of such a mask. The size bounds it though it is
// read-only, so no unbounded tmpfs appears anywhere.
const maskOpts = "ro,nosuid,nodev,noexec,size=4k"

// LabelUnprotect and LabelProgramPin: see package artefact.
const (
	LabelUnprotect  = artefact.LabelUnprotect
	LabelProgramPin = artefact.LabelProgramPin
)

// EgressContainerPlaceholder stands for the egress sidecar's name in
// committed artefacts: `mcpolicy run` starts the sidecar and names it.
const EgressContainerPlaceholder = "${MCPOLICY_EGRESS_CONTAINER}"

// LabelEgress marks an egress sidecar with the plan hash it serves.
const LabelEgress = "org.mcpolicy.egress"

// Args returns the arguments after `docker` (starting with "run") that
// start the plan's server confined. Host paths are rendered by r. For a
// plan with an egress allowlist the server joins the network namespace of
// a sidecar (see SidecarArgs), named here by a placeholder.
func Args(p *compiler.Plan, r compiler.Resolver) ([]string, error) {
	return ServerArgs(p, r, "container:"+EgressContainerPlaceholder)
}

// SidecarArgs start the egress sidecar for a plan with an allowlist: a
// container with no network but loopback, as confined as the server, whose
// only process is the forwarder (the static mcpolicy, bound read-only, on
// the server's own image so nothing is pulled) listening on
// 127.0.0.1:ProxyPort and carrying connections to the proxy's socket. It
// exits when the proxy goes away (--lifeline) and removes itself (--rm).
func SidecarArgs(p *compiler.Plan, r compiler.Resolver, name string) ([]string, error) {
	if p.Network.Mode != "allowlist" {
		return nil, fmt.Errorf("server %q has no egress allowlist: it needs no sidecar", p.Server)
	}
	user, err := userArg(p, r)
	if err != nil {
		return nil, err
	}
	if err := checkImage(p); err != nil {
		return nil, err
	}
	self, err := bindSpec(p.Server, r.Resolve(compiler.SelfPath), sandbox.Forwarder, true)
	if err != nil {
		return nil, err
	}
	sock, err := bindSpec(p.Server, r.Resolve(compiler.EgressSocketPath), sandbox.Socket, true)
	if err != nil {
		return nil, err
	}
	a := []string{"run", "-d", "--rm", "--name", name,
		"--network", "none",
		"--read-only",
		"--cap-drop", "ALL",
		"--security-opt", "no-new-privileges",
		"--user", user,
		"--pids-limit", "64",
		"--memory", "64m",
	}
	for _, d := range maskedDirs {
		a = append(a, "--tmpfs", d+":"+maskOpts)
	}
	a = append(a, "--mount", self, "--mount", sock,
		"--entrypoint", sandbox.Forwarder,
		"--label", LabelEgress+"="+p.Hash,
		p.Image,
	)
	a = append(a, sandbox.ForwardCommand(p.Network.ProxyPort, true)[1:]...)
	for _, s := range a {
		if err := emit.CheckSafe(p.Server, "argument", s); err != nil {
			return nil, err
		}
	}
	return a, nil
}

func checkImage(p *compiler.Plan) error {
	if p.Image == "" {
		return &emit.NotEnforceableError{Pos: p.Pos, Field: p.Field(),
			Server: p.Server, Backend: Backend, Restriction: "a server without an image",
			Alternative: `set "image" in the policy, or use a host backend (bwrap, landlock) that runs "command" directly`}
	}
	if strings.HasPrefix(p.Image, "-") {
		return &emit.UnsafeStringError{Server: p.Server, What: "image (it would be read as a flag)", Value: p.Image}
	}
	return nil
}

// ServerArgs is Args with the egress sidecar's network namespace as the
// engine names it: "container:NAME", or podman's "ns:/proc/PID/ns/net"
// (ignored for a plan without an allowlist, whose network is none).
func ServerArgs(p *compiler.Plan, r compiler.Resolver, egressNetwork string) ([]string, error) {
	if err := checkImage(p); err != nil {
		return nil, err
	}
	user, err := userArg(p, r)
	if err != nil {
		return nil, err
	}
	if err := emit.Check(p, Backend, Enforcement(p)); err != nil {
		return nil, err
	}
	network := "none"
	if p.Network.Mode == "allowlist" {
		// The sidecar's namespace holds loopback and the forwarder, nothing else.
		network = egressNetwork
	}

	a := []string{"run", "--rm", "-i",
		"--network", network,
		"--read-only",
		"--cap-drop", "ALL",
		"--security-opt", "no-new-privileges",
		"--user", user,
	}

	for _, d := range maskedDirs {
		if !p.HoldsGrantAt(d) {
			a = append(a, "--tmpfs", d+":"+maskOpts)
		}
	}
	for _, s := range p.Tmpfs() { // the scratch, and the packs' caches
		a = append(a, "--tmpfs", compiler.HomePath(s.Target, r)+":rw,nosuid,nodev,noexec,size="+bytesize.Format(s.SizeBytes))
	}

	for _, m := range p.Mounts {
		spec, err := bindSpec(p.Server, r.Resolve(m.Source), compiler.HomePath(m.Target, r), m.Mode == compiler.ReadOnly)
		if err != nil {
			return nil, err
		}
		a = append(a, "--mount", spec)
	}
	// The runtime packs' host paths, read-only at the same path (the image
	// is the runtime; these are what it lacks): mcpolicy-launch drops one
	// missing at spawn (LabelOptional), so the engine never creates it.
	var optional []string
	for _, hp := range p.PackPaths() {
		at := r.Resolve(hp)
		spec, err := bindSpec(p.Server, at, at, true)
		if err != nil {
			return nil, err
		}
		a = append(a, "--mount", spec)
		optional = append(optional, at)
	}
	// Protected paths come after the mounts holding them; docker orders
	// mounts by depth anyway, so the read-only one always lands on top.
	for _, pr := range p.Protected {
		spec, err := bindSpec(p.Server, r.Resolve(pr.Source), compiler.HomePath(pr.Target, r), true)
		if err != nil {
			return nil, err
		}
		a = append(a, "--mount", spec)
	}
	// Hidden paths: mcpolicy-launch expands each pattern at spawn and
	// binds an empty mode-0000 folder or file over each match.
	for _, m := range p.Mounts {
		for _, h := range m.Hide {
			a = append(a, artefact.EngineHideFlag, (&artefact.EngineHide{Source: r.Resolve(m.Source), Target: compiler.HomePath(m.Target, r), Pattern: h}).String())
		}
	}

	for _, e := range p.Env {
		a = append(a, "-e", e.Name) // the name only: docker copies the value from its own environment
	}
	// With "~/..." targets the host user's home path is HOME in the
	// container too (where those targets are), unless the policy sets it.
	if p.HomeTargets() && !slices.ContainsFunc(p.EnvValues(), func(e compiler.EnvValue) bool { return e.Name == "HOME" }) {
		a = append(a, "-e", "HOME="+compiler.HomePath("~", r))
	}
	for _, e := range p.EnvValues() {
		a = append(a, "-e", e.Name+"="+p.HomeWord(compiler.ResolveValue(e.Value, r), r)) // the policy's constant: not a secret, and no host value replaces it
	}
	if p.Network.Mode == "allowlist" {
		for _, kv := range sandbox.ProxyEnv(p.Network.ProxyPort) {
			a = append(a, "-e", kv[0]+"="+kv[1]) // not secrets: the proxy's loopback address
		}
	}
	if s := p.Subtractions; s.MemoryBytes > 0 {
		a = append(a, "--memory", bytesize.Format(s.MemoryBytes), "--memory-swap", bytesize.Format(s.MemoryBytes))
	}
	if s := p.Subtractions; s.Pids > 0 {
		a = append(a, "--pids-limit", strconv.FormatInt(s.Pids, 10))
	}
	if s := p.Subtractions; s.MilliCPUs > 0 {
		a = append(a, "--cpus", strconv.FormatFloat(float64(s.MilliCPUs)/1000, 'f', -1, 64))
	}
	if p.Workdir != "" {
		a = append(a, "--workdir", compiler.HomePath(p.Workdir, r))
	}
	a = append(a, "--label", LabelPlan+"="+p.Hash)
	// What mcpolicy-launch enforces beyond the engine's arguments, pinned
	// with them: the names the fixed top level leaves writable, the
	// programs whose digest the entry must pin. Labels, so the arguments
	// still run as they are under docker and podman.
	for _, n := range p.UnprotectedNames() {
		a = append(a, "--label", LabelUnprotect+"="+n)
	}
	for _, h := range p.ProgramPins {
		a = append(a, "--label", LabelProgramPin+"="+r.Resolve(h))
	}
	for _, at := range optional {
		a = append(a, "--label", artefact.LabelOptional+"="+at)
	}
	if d := emit.ToolsDigest(p); d != "" {
		a = append(a, "--label", artefact.LabelTools+"="+d)
	}
	a = append(a, p.Image)
	for _, w := range p.Command {
		a = append(a, p.HomeWord(w, r))
	}
	for _, s := range a {
		if err := emit.CheckSafe(p.Server, "argument", s); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// bindSpec writes a --mount value. Docker and podman read it with Go's
// encoding/csv, so a field holding ',' or '"' is quoted the same way.
func bindSpec(server, source, target string, readonly bool) (string, error) {
	if err := emit.CheckSafe(server, "mount source", source); err != nil {
		return "", err
	}
	if err := emit.CheckSafe(server, "mount target", target); err != nil {
		return "", err
	}
	v := "type=bind," + csvField("source="+source) + "," + csvField("target="+target)
	if readonly {
		v += ",readonly"
	}
	return v, nil
}

// csvField is one field as encoding/csv writes it (the engines read
// --mount as a CSV record): quoted when it holds a comma, a quote or a
// line break, starts with a space or is \., its quotes doubled. A
// csv.Writer per mount was most of what rendering the arguments cost.
func csvField(f string) string {
	r, _ := utf8.DecodeRuneInString(f)
	if f == "" || f != `\.` && !strings.ContainsAny(f, ",\"\r\n") && !unicode.IsSpace(r) {
		return f
	}
	return `"` + strings.ReplaceAll(f, `"`, `""`) + `"`
}

// userArg is --user's value: the plan's ids, or for "invoker" the invoking
// user's (${UID}:${GID} until mcpolicy-launch resolves them at spawn).
func userArg(p *compiler.Plan, r compiler.Resolver) (string, error) {
	uid, gid, err := compiler.UserIDs(p, r)
	return uid + ":" + gid, err
}
