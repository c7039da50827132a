package launch

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os/exec"
	"path"
	"sort"
	"strings"

	"github.com/mcpolicy/mcpolicy/protect"
	"golang.org/x/sys/unix"
)

// PrepareEngine checks a `docker run` / `podman run` argv (as the client
// entry holds it, after the engine's name) immediately before the engine
// runs it, and returns the argv to run:
//   - every bind source is opened below its base without following a
//     symlink; one that is (or passes through) a symlink is refused;
//   - a read-write bind of the project root gets a fixed top level, as under
//     bwrap: the root read-only, each existing entry re-bound (protected
//     ones read-only), so no new top-level name can be created and none can
//     be renamed.
//
//   - every VOLUME the image declares is masked with an empty, read-only,
//     4 KiB tmpfs (the engine would otherwise put a writable, unbounded
//     volume on the host's disk there, --read-only or not); an image that
//     cannot be inspected is refused.
//
// The engine resolves the sources again when it mounts them: a server
// still running can race that instant, which bwrap's descriptors close.
func PrepareEngine(engine string, args []string, root, home string, unprotected []string) ([]string, error) {
	if len(args) == 0 || args[0] != "run" {
		return nil, fmt.Errorf("expected the engine's arguments starting with \"run\"")
	}
	if root == "" || !pathIsAbs(root) {
		return nil, fmt.Errorf("the project root is unknown (--project-root, or PROJECT_ROOT, must name it as an absolute path): without it a read-write mount of the project would get no fixed top level and no protected names; refusing to start")
	}
	src := NewSources(root, home)
	var out []string
	var rwTargets []string
	bound := map[string]bool{} // targets a fixed top level already bound read-only
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if i == 0 {
			out = append(out, a)
			continue
		}
		if !strings.HasPrefix(a, "-") {
			break // the image: the rest is the server's command
		}
		if a == "--mount" && i+1 < len(args) {
			m, err := parseMount(args[i+1])
			if err != nil {
				return nil, err
			}
			i++
			if m.kind != "bind" {
				out = append(out, a, args[i])
				continue
			}
			if m.readonly && below(m.target, rwTargets) {
				// A protected name: gone (nothing to bind), or already
				// bound read-only by the fixed top level (engines refuse
				// a duplicate mount point); a symlink is refused.
				fd, err := src.Open(m.source)
				if IsMissing(err) {
					continue
				}
				if err != nil {
					return nil, err
				}
				unix.Close(fd)
				if !bound[path.Clean(m.target)] {
					out = append(out, a, args[i])
				}
				continue
			}
			if !m.readonly && path.Clean(m.source) == path.Clean(root) {
				extra, err := engineFixedTop(src, m, unprotected, bound)
				if err != nil {
					return nil, err
				}
				out = append(out, extra...)
				rwTargets = append(rwTargets, m.target)
				continue
			}
			fd, err := src.Open(m.source)
			if err != nil {
				return nil, err
			}
			unix.Close(fd)
			if !m.readonly {
				rwTargets = append(rwTargets, m.target)
			}
			out = append(out, a, args[i])
			continue
		}
		n, known := engineOperands[a]
		if !known || i+n >= len(args) {
			return nil, fmt.Errorf("engine argument %q: not one mcpolicy emits, refused (the launcher must understand every flag to check the mounts)", a)
		}
		out = append(out, args[i:i+1+n]...)
		i += n
	}
	if i >= len(args) {
		return nil, fmt.Errorf("engine arguments name no image")
	}
	masks, err := volumeMasks(engine, args[i], targets(out))
	if err != nil {
		return nil, err
	}
	out = append(out, masks...)
	return append(out, args[i:]...), nil
}

// VolumeMask is how an image's VOLUME is masked: as the docker emitter
// masks /run and /tmp, empty and read-only, its size bounded.
const VolumeMask = ":ro,nosuid,nodev,noexec,size=4k"

// volumeMasks inspects the image and masks each volume not already
// covered by a grant at that very path.
func volumeMasks(engine, image string, have []string) ([]string, error) {
	out, err := exec.Command(engine, "image", "inspect", "--format", "{{json .Config.Volumes}}", image).Output()
	if err != nil {
		var msg string
		if ee, ok := err.(*exec.ExitError); ok {
			msg = strings.TrimSpace(string(ee.Stderr))
		}
		return nil, fmt.Errorf("cannot inspect image %s with %s (%v %s): its VOLUMEs must be masked before it runs; pull or build it first", image, engine, err, msg)
	}
	var vols map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(out), &vols); err != nil {
		return nil, fmt.Errorf("image %s: reading its volumes: %v", image, err)
	}
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
			if m, err := parseMount(args[i+1]); err == nil {
				t = append(t, path.Clean(m.target))
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

// engineOperands are the `run` flags the docker emitter writes, with how
// many values each takes.
var engineOperands = map[string]int{
	"--rm": 0, "-i": 0, "-d": 0, "--read-only": 0,
	"--network": 1, "--cap-drop": 1, "--security-opt": 1, "--user": 1, "--tmpfs": 1,
	"-e": 1, "--memory": 1, "--memory-swap": 1, "--pids-limit": 1, "--cpus": 1,
	"--workdir": 1, "--label": 1, "--name": 1, "--entrypoint": 1, "--read-only-tmpfs=false": 0,
}

type mountSpec struct {
	kind, source, target string
	readonly             bool
	extra                []string
}

// parseMount reads a --mount value the way docker and podman do (CSV).
func parseMount(v string) (*mountSpec, error) {
	r := csv.NewReader(strings.NewReader(v))
	fields, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("--mount %q: %v", v, err)
	}
	m := &mountSpec{}
	for _, f := range fields {
		k, val, _ := strings.Cut(f, "=")
		switch strings.ToLower(k) {
		case "type":
			m.kind = val
		case "source", "src":
			m.source = val
		case "target", "destination", "dst":
			m.target = val
		case "readonly", "ro":
			m.readonly = val == "" || val == "true" || val == "1"
		default:
			m.extra = append(m.extra, f)
		}
	}
	if m.kind == "bind" && (m.source == "" || m.target == "") {
		return nil, fmt.Errorf("--mount %q: a bind needs a source and a target", v)
	}
	return m, nil
}

func (m *mountSpec) String() string {
	fields := []string{"type=" + m.kind, "source=" + m.source, "target=" + m.target}
	if m.readonly {
		fields = append(fields, "readonly")
	}
	fields = append(fields, m.extra...)
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.Write(fields)
	w.Flush()
	return strings.TrimSuffix(b.String(), "\n")
}

func engineFixedTop(src *Sources, m *mountSpec, unprotected []string, bound map[string]bool) ([]string, error) {
	fd, err := src.Open(m.source)
	if err != nil {
		return nil, err
	}
	unix.Close(fd)
	kids, err := src.topLevel(m.source, unprotected)
	if err != nil {
		return nil, err
	}
	defer closeChildren(kids)
	ro := *m
	ro.readonly = true
	out := []string{"--mount", ro.String()}
	for _, k := range kids {
		c := &mountSpec{kind: "bind", source: path.Join(m.source, k.name), target: path.Join(m.target, k.name),
			readonly: protect.Except(k.name, unprotected) != ""}
		if c.readonly {
			bound[c.target] = true
		}
		out = append(out, "--mount", c.String())
	}
	return out, nil
}

// EngineExec runs the engine with args, in the launcher's environment (the
// engine copies -e NAME values from it and needs its address).
func EngineExec(engine string, args []string, environ []string) error {
	p, err := exec.LookPath(engine)
	if err != nil {
		return &UnsupportedError{fmt.Errorf("%s is not installed (or not in PATH): %v", engine, err)}
	}
	return fmt.Errorf("exec %s: %w", p, unix.Exec(p, append([]string{p}, args...), environ))
}
