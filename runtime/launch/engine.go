package launch

import (
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/protect"
)

// Engine prepares `docker run` / `podman run` arguments (as the client
// entry holds them, after the engine's name) immediately before the engine
// runs them:
//   - every bind source is opened below its base without following a
//     symlink; one that is (or passes through) a symlink is refused;
//   - a read-write bind of the project root gets a fixed top level, as under
//     bwrap: the root read-only, each existing entry re-bound (protected
//     ones read-only), so no new top-level name can be created and none can
//     be renamed;
//   - the engine resolves each source again when it mounts it, so a server
//     still running elsewhere could swap one in between: the container's
//     first process is therefore Verifier (a static mcpolicy or
//     mcpolicy-launch, bound read-only), which checks that every mount
//     target is the very file the launcher opened (device and inode) and
//     only then execs the image's entrypoint and command — exit 8 if not;
//   - every VOLUME the image declares is masked with an empty, read-only,
//     4 KiB tmpfs (the engine would otherwise put a writable, unbounded
//     volume on the host's disk there, --read-only or not); an image that
//     cannot be inspected is refused; the image is read where its engine
//     keeps it, without starting the engine's CLI (inspect), and the
//     container runs by the ID read, so the image started is the one
//     whose VOLUMEs were masked;
//   - the container runs under mcpolicy's seccomp profile
//     (seccomp.EngineProfile: Docker's default, for podman too), which the
//     engine reads from Seccomp; arguments carrying a seccomp option of
//     their own are refused;
//   - under podman, the server's umask is given (--umask: the launcher's,
//     with 022 added), as bwrap and Landlock get it: podman takes it from
//     containers.conf otherwise, which the client's environment
//     (CONTAINERS_CONF) or the user's configuration may set to 0000, and
//     runc applies it before the seccomp profile, so refusing umask()
//     there cannot help. docker has no such setting: runc's 022.
type Engine struct {
	Path        string // docker or podman: a name or a path
	Root, Home  string // the project root (required) and the home folder
	Unprotected []string
	Verifier    string // host path of a static mcpolicy or mcpolicy-launch
	Seccomp     string // where the engine reads the profile (EngineSeccomp): /proc/self/fd/N
}

// VerifierTarget is where the verifier is bound inside the container.
const VerifierTarget = "/.mcpolicy/launch"

// VerifyMountsArg is argv[1] of the verifier inside the container.
const VerifyMountsArg = "__mcpolicy-verify-mounts"

// Prepare returns the argv to run.
func (e Engine) Prepare(args []string) ([]string, error) {
	if err := e.check(args); err != nil {
		return nil, err
	}
	// Which engine, for the scratch's owner and the umask.
	podman, native, err := e.kind()
	if err != nil {
		return nil, err
	}
	p := &enginePrep{Engine: e, podman: podman, native: native, src: NewSources(e.Root, e.Home),
		explicit: explicitTargets(args), optional: optionalTargets(args), bound: map[string]bool{}}
	i, err := p.options(args)
	if err != nil {
		return nil, err
	}
	if i >= len(args) {
		return nil, fmt.Errorf("engine arguments name no image")
	}
	return p.entry(args[i], args[i+1:])
}

// check refuses what Prepare cannot make safe: arguments that are not a
// run, no project root, no verifier, no seccomp profile.
func (e Engine) check(args []string) error {
	if len(args) == 0 || args[0] != "run" {
		return fmt.Errorf("expected the engine's arguments starting with \"run\"")
	}
	if e.Root == "" || !pathIsAbs(e.Root) {
		return fmt.Errorf("the project root is unknown (--project-root, or PROJECT_ROOT, must name it as an absolute path): without it a read-write mount of the project would get no fixed top level and no protected names; refusing to start")
	}
	if e.Verifier == "" {
		return fmt.Errorf("no verifier: the mounts cannot be checked inside the container")
	}
	if e.Seccomp == "" {
		return fmt.Errorf("no seccomp profile: the engine's own default would confine the server (podman's allows the keyring)")
	}
	return nil
}

// explicitTargets are the arguments' own bind targets. A policy's mount
// below a read-write project mount may sit exactly on one of its top-level
// entries ("docs" -> /workspace/docs, read-only), which the fixed top level
// would bind too: engines refuse a duplicate mount point, and bwrap's later
// bind wins, so the policy's mount takes that place here as well.
func explicitTargets(args []string) map[string]bool {
	explicit := map[string]bool{}
	for j := 1; j+1 < len(args) && strings.HasPrefix(args[j], "-"); j++ {
		if args[j] == "--mount" {
			if m, err := artefact.ParseMount(args[j+1]); err == nil && m.Kind == "bind" {
				explicit[path.Clean(m.Target)] = true
			}
			j++
		} else if n, ok := artefact.EngineOperands(args[j]); ok {
			j += n
		}
	}
	return explicit
}

// optionalTargets are the targets the arguments label optional (a runtime
// pack's host paths): a bind there is dropped when its source is missing.
func optionalTargets(args []string) map[string]bool {
	optional := map[string]bool{}
	for j := 1; j+1 < len(args) && strings.HasPrefix(args[j], "-"); j++ {
		if args[j] == "--label" {
			if t, ok := strings.CutPrefix(args[j+1], artefact.LabelOptional+"="); ok {
				optional[path.Clean(t)] = true
			}
			j++
		} else if args[j] == "--mount" {
			j++
		} else if n, ok := artefact.EngineOperands(args[j]); ok {
			j += n
		}
	}
	return optional
}

// enginePrep is one Prepare under way: the argv built so far and what the
// options seen so far decided.
type enginePrep struct {
	Engine
	podman    bool
	native    bool // the engine's own CLI (Engine.kind): its store may be read
	src       *Sources
	explicit  map[string]bool // explicitTargets
	optional  map[string]bool // optionalTargets
	out       []string
	user      string // --user, resolved: the scratch's owner
	rwTargets []string
	bound     map[string]bool // targets a fixed top level already bound read-only
	expect    []string        // target=dev:ino, checked inside the container
}

// opened records the device and inode of a source opened for target, for
// the verifier, and closes it.
func (p *enginePrep) opened(fd int, target string) error {
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	p.expect = append(p.expect, fmt.Sprintf("%s=%d:%d", path.Clean(target), st.Dev, st.Ino))
	return nil
}

// options copies "run" and the engine's options to out, with the seccomp
// profile (and, under podman, the umask) first, checking each option in
// turn; it returns the index of the image (len(args) if there is none).
func (p *enginePrep) options(args []string) (int, error) {
	p.out = append(p.out, args[0], "--security-opt", "seccomp="+p.Seccomp)
	if p.podman {
		p.out = append(p.out, "--umask", engineUmask())
	}
	i := 1
	for ; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			break // the image: the rest is the server's command
		}
		if a == artefact.EngineHideFlag && i+1 < len(args) {
			if err := p.hide(args[i+1]); err != nil {
				return 0, err
			}
			i++
			continue
		}
		if a == "--mount" && i+1 < len(args) {
			if err := p.mount(a, args[i+1]); err != nil {
				return 0, err
			}
			i++
			continue
		}
		n, err := p.option(args, i)
		if err != nil {
			return 0, err
		}
		i += n
	}
	return i, nil
}

// mount checks one --mount: its source opened without following a
// symlink (and recorded for the verifier), a read-write project root
// given its fixed top level.
func (p *enginePrep) mount(a, v string) error {
	m, err := artefact.ParseMount(v)
	if err != nil {
		return err
	}
	if !m.ReadOnly && path.Clean(m.Source) == path.Clean(p.Root) {
		extra, err := engineFixedTop(p.src, m, p.Unprotected, p.bound, p.explicit, p.opened)
		if err != nil {
			return err
		}
		p.out = append(p.out, extra...)
		p.rwTargets = append(p.rwTargets, m.Target)
		return nil
	}
	optional := m.ReadOnly && p.optional[path.Clean(m.Target)]
	fd, err := p.openSource(m.Source, optional)
	if optional && IsMissingSource(err) {
		return nil // a runtime pack's path this machine lacks: never created
	}
	if m.ReadOnly && below(m.Target, p.rwTargets) {
		// A protected name: gone (nothing to bind), or already
		// bound read-only by the fixed top level (engines refuse
		// a duplicate mount point); a symlink is refused.
		if IsMissing(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if p.bound[path.Clean(m.Target)] {
			unix.Close(fd)
			return nil
		}
	}
	if err != nil {
		return err
	}
	if err := p.opened(fd, m.Target); err != nil {
		return err
	}
	if !m.ReadOnly {
		p.rwTargets = append(p.rwTargets, m.Target)
	}
	p.out = append(p.out, a, v)
	return nil
}

// openSource opens a bind's source below its base without following a
// symlink; a runtime pack's system path (below / alone: no server's user
// writes there) follows them, as the engine will: /usr/lib/go is a link to
// /usr/lib/go-1.N on Debian.
func (p *enginePrep) openSource(src string, optional bool) (int, error) {
	if base, _ := p.src.split(src); optional && base == "/" {
		return openSystemPath(src)
	}
	return p.src.Open(src)
}

// option checks the option at args[i] (not a --mount) and copies it to
// out; it returns how many operands it took.
func (p *enginePrep) option(args []string, i int) (int, error) {
	a := args[i]
	if a == "--entrypoint" {
		return 0, fmt.Errorf("--entrypoint: the launcher sets the container's first process itself (the mount check)")
	}
	n, known := artefact.EngineOperands(a)
	if !known || i+n >= len(args) {
		return 0, fmt.Errorf("engine argument %q: not one mcpolicy emits, refused (the launcher must understand every flag to check the mounts)", a)
	}
	if a == "--security-opt" && args[i+1] != "no-new-privileges" {
		return 0, fmt.Errorf("engine argument --security-opt %s: not one mcpolicy emits, refused (the launcher sets the seccomp profile itself)", args[i+1])
	}
	if a == "--user" {
		u, err := invokerUser(p.server(args), args[i+1])
		if err != nil {
			return 0, err
		}
		p.out = append(p.out, a, u)
		p.user = u
		return 1, nil
	}
	if a == "--tmpfs" && writableTmpfs(args[i+1]) {
		v, err := scratchOwner(args[i+1], p.user, p.podman)
		if err != nil {
			return 0, err
		}
		p.out = append(p.out, a, v)
		return 1, nil
	}
	p.out = append(p.out, args[i:i+1+n]...)
	return n, nil
}

// entry finishes the argv: the image's VOLUMEs masked, then the verifier
// as the container's first process, given the expected mounts and the
// image's entrypoint and command (the policy's command, if any, in place
// of the image's).
func (p *enginePrep) entry(image string, command []string) ([]string, error) {
	info, err := inspect(p.Path, p.podman, p.native, image)
	if err != nil {
		return nil, err
	}
	cfg := info.Config
	masks, err := volumeMasks(image, cfg.Volumes, targets(p.out))
	if err != nil {
		return nil, err
	}
	out := append(p.out, masks...)
	if len(command) == 0 {
		command = cfg.Cmd
	}
	argv := append(append([]string{}, cfg.Entrypoint...), command...)
	if len(argv) == 0 {
		return nil, fmt.Errorf("image %s has no entrypoint or command, and the policy gives none", image)
	}
	verifier := (&artefact.Mount{Kind: "bind", Source: p.Verifier, Target: VerifierTarget, ReadOnly: true}).String()
	// By ID: a tag moved since the inspection cannot bring in another
	// image (other VOLUMEs, another entrypoint).
	out = append(out, "--mount", verifier, "--entrypoint", VerifierTarget, info.ID, VerifyMountsArg)
	out = append(out, p.expect...)
	out = append(out, "--")
	return append(out, argv...), nil
}

// writableTmpfs reports whether a --tmpfs value is writable: the scratch
// (the masks are "ro").
func writableTmpfs(v string) bool {
	_, opts, _ := strings.Cut(v, ":")
	return !slices.Contains(strings.Split(opts, ","), "ro")
}

// scratchOwner gives the scratch tmpfs (a --tmpfs value) to the
// container's user. runc makes a tmpfs mounted over an image's folder take
// that folder's mode, whatever mode= says: an image whose /tmp is 0755
// root left the scratch unwritable for uid 1000 (and pushed users towards
// user: "0:0"). docker takes uid= and gid=, podman refuses them and takes
// U (chown to the container's user) instead.
func scratchOwner(v, user string, podman bool) (string, error) {
	uid, gid, ok := strings.Cut(user, ":")
	if !ok || !allDigits(uid) || !allDigits(gid) {
		return "", fmt.Errorf("--tmpfs %s: the scratch's owner is unknown (--user %q, before it, must give numeric uid:gid)", v, user)
	}
	if podman {
		return v + ",U", nil
	}
	return v + ",uid=" + uid + ",gid=" + gid, nil
}

func allDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// VolumeMask is how an image's VOLUME is masked: as the docker emitter
// masks /run and /tmp, empty and read-only, its size bounded.
const VolumeMask = ":ro,nosuid,nodev,noexec,size=4k"

// volumeMasks inspects the image and masks each volume not already
// covered by a grant at that very path.
func volumeMasks(image string, vols map[string]any, have []string) ([]string, error) {
	var names []string
	for v := range vols {
		names = append(names, path.Clean(v))
	}
	sort.Strings(names)
	var masks []string
	for _, v := range names {
		covered := false
		for _, t := range have {
			if t == v {
				covered = true
			} else if strings.HasPrefix(t, strings.TrimSuffix(v, "/")+"/") {
				return nil, fmt.Errorf("image %s declares VOLUME %s, which holds the grant at %s: the engine would put a writable volume around it; use an image without that VOLUME, or mount the grant elsewhere", image, v, t)
			}
		}
		if !covered {
			if strings.ContainsAny(v, ",:") {
				return nil, fmt.Errorf("image %s declares VOLUME %q, which cannot be masked by --tmpfs: refusing it", image, v)
			}
			masks = append(masks, "--tmpfs", v+VolumeMask)
		}
	}
	return masks, nil
}

// targets are the sandbox paths the argv mounts something at.
func targets(args []string) []string {
	var t []string
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--mount":
			if m, err := artefact.ParseMount(args[i+1]); err == nil {
				t = append(t, path.Clean(m.Target))
			}
			i++
		case "--tmpfs":
			dst, _, _ := strings.Cut(args[i+1], ":")
			t = append(t, path.Clean(dst))
			i++
		}
	}
	return t
}

// engineFixedTop binds a read-write project root read-only and each of
// its top-level entries on top: protected ones read-only (recorded in
// bound), the others read-write — but for an entry a policy's own mount
// takes (explicit), which it leaves to that mount.
func engineFixedTop(src *Sources, m *artefact.Mount, unprotected []string, bound, explicit map[string]bool, opened func(int, string) error) ([]string, error) {
	fd, err := src.Open(m.Source)
	if err != nil {
		return nil, err
	}
	if err := opened(fd, m.Target); err != nil {
		return nil, err
	}
	kids, err := src.topLevel(m.Source, unprotected)
	if err != nil {
		return nil, err
	}
	ro := *m
	ro.ReadOnly = true
	out := []string{"--mount", ro.String()}
	for _, k := range kids {
		c := &artefact.Mount{Kind: "bind", Source: path.Join(m.Source, k.name), Target: path.Join(m.Target, k.name),
			ReadOnly: protect.Except(k.name, unprotected) != ""}
		if c.ReadOnly {
			bound[c.Target] = true
		} else if explicit[c.Target] {
			unix.Close(k.fd)
			continue
		}
		if err := opened(k.fd, c.Target); err != nil {
			return nil, err
		}
		out = append(out, "--mount", c.String())
	}
	return out, nil
}

// server names the plan in messages: its org.mcpolicy.plan label.
func (e Engine) server(args []string) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "--label" && strings.HasPrefix(args[i+1], "org.mcpolicy.plan=") {
			return "of plan " + strings.TrimPrefix(args[i+1], "org.mcpolicy.plan=")
		}
	}
	return "in this container"
}
