package escape_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/emit/docker"
	"github.com/mcpolicy/mcpolicy/emit/kubernetes"
	"github.com/mcpolicy/mcpolicy/internal/testenv"
	"github.com/mcpolicy/mcpolicy/project"
)

// The kubernetes backend's scenarios. The server's Pod is the emitter's
// own (kubernetes.Manifest with Options.HostPath, so that the Pod sees
// this machine's project folders), played by `podman kube play` as the
// differential harness plays it (verify/kubernetes_test.go). What podman
// does not do, and how this file stands in for it:
//
//   - NetworkPolicy: podman ignores it. The Pod is played with --network
//     none, which stands for the emitted deny-all NetworkPolicy (whose
//     shape the differential harness checks structurally); the weakened
//     wiring plays it on podman's default network, as a cluster whose CNI
//     does not enforce NetworkPolicy would run it.
//   - subPath of a hostPath volume: podman 4 ignores it (it mounts the
//     whole volume). Protected entries and nested sources are subPaths, so
//     every Pod is played with its subPaths resolved first by
//     kubeletSubPaths, a model of the kubelet's own resolution
//     (k8s.io/mount-utils subpath_linux.go: doBindSubPath, SafeMakeDir):
//     symlinks in the joined path are evaluated, the result must stay
//     inside the volume or the container is not started
//     (CreateContainerConfigError), and what is bound is the evaluated
//     path. The differential harness joins the paths without evaluating
//     symlinks, which is enough where nothing plants one but would follow
//     a planted symlink out of the volume here. A refusal is the model's:
//     podman played nothing, and the scenarios say so.
//   - Annotations (podman 4.3 refuses values over 63 characters): dropped;
//     they confine nothing.
//
// The kubernetes backend refuses a read-write mount of the project root
// (no launcher fixes its top level in a cluster), so its project is a
// folder holding the policy and a git checkout, shop/, mounted read-write
// at /workspace, and shop/src/gen read-only at /gen (the emitter refuses
// it read-write: k8s-symlink-inside-volume): the checkout's .git and
// .env.local are the volume again at a read-only subPath, /gen the volume
// at subPath src/gen. The sandbox's root is the checkout: the snapshot,
// the payload and the user's next git commands are the checkout's.

// kube is the pseudo-backend name of these scenarios.
const kube = "kubernetes"

// kubePolicy is the kubernetes project's policy (mcpolicy.cue beside shop/).
const kubePolicy = `version: "v1"
servers: attacker: {
	command: ["/bin/sh", "/workspace/attack.sh"]
	image:   %q
	mounts: [
		{source: "shop", target: "/workspace", mode: "rw"},
		{source: "shop/src/gen", target: "/gen", mode: "ro"},
	]
	backends: ["kubernetes"]
}
`

// kubeUnavailable says why `podman kube play` cannot run here, or "".
func kubeUnavailable() string { return testenv.KubePlay(docker.Podman.Runtime()) }

// kubeSandbox is one kubernetes project: the checkout is sb.root.
type kubeSandbox struct {
	*sandbox
	policyDir string
	plan      *compiler.Plan
	pod       *corev1.Pod // the emitted Pod (Options.HostPath), as emitted
	id        string
	plays     int
}

var kubeSeq atomic.Int64

func (s *suite) kubeSandbox(t *testing.T, helper bool) *kubeSandbox {
	t.Helper()
	s.mu.Lock()
	s.seq++
	dir := filepath.Join(s.base, fmt.Sprintf("%02d-%s", s.seq, strings.NewReplacer("/", "-").Replace(t.Name())))
	s.mu.Unlock()
	policyDir := filepath.Join(dir, "proj")
	sb := &sandbox{
		t: t, s: s, backend: kube, dir: dir,
		root: filepath.Join(policyDir, "shop"), home: filepath.Join(dir, "home"), markers: filepath.Join(dir, "markers"),
		cwd: workspace, ranDir: "src", client: "none",
	}
	files := map[string]string{
		"proj/mcpolicy.cue":         fmt.Sprintf(kubePolicy, s.image),
		"proj/shop/README.md":       "a checkout\n",
		"proj/shop/src/main.txt":    "code\n",
		"proj/shop/src/gen/out.txt": "generated\n",
		"proj/shop/.env.local":      "API_TOKEN=planted-env\n",
		"proj/shop/attack.sh":       "echo idle\n",
	}
	for name, body := range plantedHome {
		files["home/"+name] = body
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(body), 0o644))
	}
	must(t, os.MkdirAll(sb.markers, 0o755))
	sb.git(t, "init", "-q", "-b", "main")
	sb.git(t, "add", "-A")
	sb.git(t, "commit", "-q", "-m", "checkout")
	s.importImage(t, "podman")
	sb.mcpolicyRun(t, "build", policyDir)
	// The Pod runs as uid 1000: the checkout must be writable by it
	// wherever the mounts allow, so a denial is the confinement's.
	if out, err := exec.Command("chmod", "-R", "a+rwX", sb.root).CombinedOutput(); err != nil {
		t.Fatalf("chmod: %v\n%s", err, out)
	}
	if helper {
		b, err := os.ReadFile(s.helper)
		must(t, err)
		must(t, os.WriteFile(filepath.Join(sb.root, helperName), b, 0o755))
	}

	proj, err := project.Discover(policyDir)
	must(t, err)
	plans, err := proj.Compile(sb.home)
	must(t, err)
	i := slices.IndexFunc(plans, func(p *compiler.Plan) bool { return p.Server == "attacker" })
	if i < 0 {
		t.Fatalf("no plan for attacker in %s", policyDir)
	}
	data, err := kubernetes.Manifest(plans[i], compiler.Machine{ProjectRoot: policyDir, Home: sb.home}, kubernetes.Options{HostPath: true})
	must(t, err)
	docs := strings.Split(string(data), "\n---\n")
	var pod corev1.Pod
	if len(docs) < 2 {
		t.Fatalf("manifest without objects:\n%s", data)
	}
	if err := yaml.UnmarshalStrict([]byte(docs[1]), &pod); err != nil || pod.Kind != "Pod" {
		t.Fatalf("the manifest's first object: %v (kind %q)\n%s", err, pod.Kind, data)
	}
	k := &kubeSandbox{sandbox: sb, policyDir: policyDir, plan: plans[i], pod: &pod,
		id: fmt.Sprintf("esc-%d-%d", os.Getpid(), kubeSeq.Add(1))}
	if len(k.protectedMounts()) == 0 || k.genMount() < 0 {
		t.Fatalf("the emitted Pod has no protected subPath mount or no /gen mount: the scenarios need updating\n%s", data)
	}
	t.Logf("kubernetes: the emitted Pod's mounts (Options.HostPath):\n%s", describeMounts(&pod))
	return k
}

// protectedMounts are the indexes of the container's mounts that show a
// protected entry of the plan (read-only, at a subPath of the volume).
func (k *kubeSandbox) protectedMounts() []int {
	var out []int
	for i, m := range k.pod.Spec.Containers[0].VolumeMounts {
		if slices.ContainsFunc(k.plan.Protected, func(p compiler.Protected) bool { return p.Target == m.MountPath }) {
			out = append(out, i)
		}
	}
	return out
}

// genMount is the index of the container's mount at /gen, or -1.
func (k *kubeSandbox) genMount() int {
	return slices.IndexFunc(k.pod.Spec.Containers[0].VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == genTarget })
}

func describeMounts(pod *corev1.Pod) string {
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		vols[v.Name] = v
	}
	var b strings.Builder
	for _, m := range pod.Spec.Containers[0].VolumeMounts {
		src := "?"
		switch v := vols[m.Name]; {
		case v.HostPath != nil:
			src = "hostPath " + v.HostPath.Path
		case v.EmptyDir != nil:
			src = "emptyDir"
		case v.PersistentVolumeClaim != nil:
			src = "claim " + v.PersistentVolumeClaim.ClaimName
		}
		if m.SubPath != "" {
			src += " subPath " + m.SubPath
		}
		mode := "rw"
		if m.ReadOnly {
			mode = "ro"
		}
		fmt.Fprintf(&b, "  %s (%s) <- %s [%s]\n", m.MountPath, mode, src, m.Name)
	}
	return b.String()
}

// kubePlayScript plays the manifest $1 (Pod $2, container $3) with the
// network $4 (empty: podman's default network), waits for the container,
// prints its log and removes the Pod and the named volumes after $4.
const kubePlayScript = `f=$1 pod=$2 ctr=$3 net=$4
shift 4
cleanup() {
	podman pod rm -f "$pod" >/dev/null 2>&1
	for v in "$@"; do podman volume rm -f "$v" >/dev/null 2>&1; done
}
if [ -n "$net" ]; then
	podman kube play --network "$net" "$f" >&2
else
	podman kube play "$f" >&2
fi || { cleanup "$@"; exit 125; }
code=$(podman wait "$ctr") || code=125
podman logs "$ctr"
cleanup "$@"
exit "$code"
`

// playOpts are how one start of the Pod differs from the emitted one.
type playOpts struct {
	how string
	// mutate is the weakened wiring's change to the emitted Pod, made
	// before the kubelet stand-in resolves its subPaths.
	mutate func(t *testing.T, pod *corev1.Pod)
	// network is what stands for the NetworkPolicy: "none" (the default,
	// the emitted deny-all) or "default" (podman's network: no policy
	// enforced).
	network string
}

// kubeStart is one start of the Pod: the outcome of the payload, or the
// kubelet stand-in's refusal (the container never started).
type kubeStart struct {
	outcome
	refused string
}

// play starts the Pod once, as a cluster would start it again: the
// emitted Pod (or the weakened one), its subPaths resolved by the
// kubelet stand-in against the host as it is now, played by podman.
func (k *kubeSandbox) play(t *testing.T, opts playOpts, steps ...step) kubeStart {
	t.Helper()
	if opts.how == "" {
		opts.how = "emitted Pod"
	}
	k.plays++
	pod := k.pod.DeepCopy()
	pod.Name = fmt.Sprintf("%s-%d", k.id, k.plays)
	pod.Annotations = nil
	// podman 4 makes an emptyDir a named volume of the engine, shared by
	// name: each start gets its own.
	prefix := pod.Name + "-"
	var named []string
	for i := range pod.Spec.Volumes {
		pod.Spec.Volumes[i].Name = prefix + pod.Spec.Volumes[i].Name
		if pod.Spec.Volumes[i].EmptyDir != nil {
			named = append(named, pod.Spec.Volumes[i].Name)
		}
	}
	c := &pod.Spec.Containers[0]
	for i := range c.VolumeMounts {
		c.VolumeMounts[i].Name = prefix + c.VolumeMounts[i].Name
	}
	if opts.mutate != nil {
		opts.mutate(t, pod)
	}
	if err := kubeletSubPaths(pod); err != nil {
		t.Logf("kubernetes via %s: the kubelet stand-in refuses to start the container (CreateContainerConfigError): %v; podman played nothing", opts.how, err)
		return kubeStart{outcome: outcome{how: opts.how, code: -1, results: map[string]result{}, steps: steps}, refused: err.Error()}
	}
	t.Logf("kubernetes via %s: the Pod played (subPaths resolved as the kubelet would):\n%s", opts.how, describeMounts(pod))
	manifest, err := yaml.Marshal(pod)
	must(t, err)
	f := filepath.Join(k.dir, "kube", pod.Name+".yaml")
	must(t, os.MkdirAll(filepath.Dir(f), 0o755))
	must(t, os.WriteFile(f, manifest, 0o644))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		exec.CommandContext(ctx, "podman", "pod", "rm", "-f", "--ignore", pod.Name).Run()
		for _, v := range named {
			exec.CommandContext(ctx, "podman", "volume", "rm", "-f", v).Run()
		}
	})
	network := "none"
	switch opts.network {
	case "", "none":
	case "default":
		network = ""
	default:
		t.Fatalf("network %q", opts.network)
	}
	args := append([]string{"-c", kubePlayScript, "kube-play", f, pod.Name, pod.Name + "-" + c.Name, network}, named...)
	o := k.launch(t, opts.how, "/bin/sh", args, nil, steps)
	if o.code == 125 && !o.ran {
		t.Fatalf("kubernetes via %s: podman could not play the Pod:\n%s", opts.how, lastLines([]byte(o.stderr), 15))
	}
	return kubeStart{outcome: o}
}

// requireKubeletRefused is the check of a start the kubelet must refuse: nothing
// of the payload ran.
func (ks kubeStart) requireKubeletRefused(t *testing.T, why string) {
	t.Helper()
	ks.requireNoSecret(t, kube)
	if ks.refused == "" || ks.ran {
		t.Errorf("kubernetes via %s: the Pod started (exit %d, payload ran: %v); want the kubelet to refuse it: %s\nstdout:\n%s",
			ks.how, ks.code, ks.ran, why, ks.stdout)
		return
	}
	t.Logf("kubernetes: the next start was refused (%s): %s", why, ks.refused)
}

// kubeletSubPaths resolves each subPath of a hostPath volume as the
// kubelet does before it starts a container (kubelet_pods.go makeMounts,
// k8s.io/mount-utils subpath_linux.go), for a podman that ignores subPath:
// the evaluated path, which must lie inside the evaluated volume path,
// becomes a hostPath volume of its own, with the mount's readOnly. A
// missing subPath is created as a directory inside the volume
// (SafeMakeDir). An error is the kubelet's refusal to start the container.
func kubeletSubPaths(pod *corev1.Pod) error {
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		vols[v.Name] = v
	}
	c := &pod.Spec.Containers[0]
	for i, m := range c.VolumeMounts {
		if m.SubPath == "" {
			continue
		}
		v, ok := vols[m.Name]
		if !ok || v.HostPath == nil {
			return fmt.Errorf("subPath %q of volume %q: the stand-in resolves hostPath volumes only", m.SubPath, m.Name)
		}
		host, err := kubeletSubPath(v.HostPath.Path, m.SubPath)
		if err != nil {
			return fmt.Errorf("%s: %w", m.MountPath, err)
		}
		fi, err := os.Stat(host)
		if err != nil {
			return err
		}
		t := corev1.HostPathDirectory
		if !fi.IsDir() {
			t = corev1.HostPathFile
		}
		name := fmt.Sprintf("%s-sp%d", m.Name, i)
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
			HostPath: &corev1.HostPathVolumeSource{Path: host, Type: &t}}})
		c.VolumeMounts[i].Name, c.VolumeMounts[i].SubPath = name, ""
	}
	return nil
}

// kubeletSubPath is the host path the kubelet binds for subPath sub of a
// volume at volPath, or its refusal.
func kubeletSubPath(volPath, sub string) (string, error) {
	// API validation: relative, no "..".
	if path.IsAbs(sub) || slices.Contains(strings.Split(sub, "/"), "..") {
		return "", fmt.Errorf("subPath %q: must be relative and contain no '..'", sub)
	}
	full := filepath.Join(volPath, filepath.FromSlash(sub))
	if _, err := os.Stat(full); errors.Is(err, fs.ErrNotExist) {
		// SafeMakeDir(sub, volPath, the volume's mode): the existing
		// prefix, symlinks evaluated, must be inside the volume; the rest
		// is created one directory at a time, never through a symlink.
		base, err := filepath.EvalSymlinks(volPath)
		if err != nil {
			return "", fmt.Errorf("error resolving symlinks in %s: %v", volPath, err)
		}
		vi, err := os.Stat(base)
		if err != nil {
			return "", err
		}
		existing, create := filepath.Join(base, filepath.FromSlash(sub)), []string(nil)
		for {
			if _, err := os.Lstat(existing); err == nil {
				break
			}
			create = append([]string{filepath.Base(existing)}, create...)
			existing = filepath.Dir(existing)
		}
		real, err := filepath.EvalSymlinks(existing)
		if err != nil {
			return "", fmt.Errorf("error opening directory %s: %v", existing, err)
		}
		if !within(real, base) {
			return "", fmt.Errorf("path %s is outside of allowed base %s", real, base)
		}
		for _, d := range create {
			real = filepath.Join(real, d)
			if err := os.Mkdir(real, vi.Mode().Perm()); err != nil {
				return "", fmt.Errorf("cannot create directory %s: %v", real, err)
			}
		}
	}
	// doBindSubPath: evaluate both, the subpath must stay inside.
	realVol, err := filepath.EvalSymlinks(volPath)
	if err != nil {
		return "", fmt.Errorf("error resolving symlinks in %q: %v", volPath, err)
	}
	real, err := filepath.EvalSymlinks(full)
	if err != nil {
		return "", fmt.Errorf("error resolving symlinks in %q: %v", full, err)
	}
	if !within(real, realVol) {
		return "", fmt.Errorf("subpath %q not within volume path %q", real, realVol)
	}
	return real, nil
}

// within is mount-utils' PathWithinBase.
func within(p, base string) bool {
	rel, err := filepath.Rel(base, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// The weakened wirings: the emitted Pod changed as a wrong emitter or
// operator would have it.

// withoutProtected removes the read-only subPath mounts of the protected
// entries: the checkout is writable as a whole.
func (k *kubeSandbox) withoutProtected(t *testing.T, pod *corev1.Pod) {
	c := &pod.Spec.Containers[0]
	var keep []corev1.VolumeMount
	for _, m := range c.VolumeMounts {
		if !slices.ContainsFunc(k.plan.Protected, func(p compiler.Protected) bool { return p.Target == m.MountPath }) {
			keep = append(keep, m)
		}
	}
	if len(keep) == len(c.VolumeMounts) {
		t.Fatal("no protected mount to remove: the weakened wiring needs updating")
	}
	c.VolumeMounts = keep
}

// nestedAsHostPath backs /gen by a hostPath volume of its source instead
// of the checkout's volume at a subPath: the runtime follows a symlink
// there, as a hostPath of a folder the server can write beside would.
func (k *kubeSandbox) nestedAsHostPath(t *testing.T, pod *corev1.Pod) {
	c := &pod.Spec.Containers[0]
	i := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == genTarget })
	if i < 0 || c.VolumeMounts[i].SubPath == "" {
		t.Fatal("no /gen subPath mount: the weakened wiring needs updating")
	}
	dir := corev1.HostPathDirectory
	name := pod.Name + "-gen-hostpath"
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
		HostPath: &corev1.HostPathVolumeSource{Path: filepath.Join(k.root, "src", "gen"), Type: &dir}}})
	c.VolumeMounts[i].Name, c.VolumeMounts[i].SubPath = name, ""
}

// genWritable makes /gen the checkout's volume at a read-write subPath:
// the emitter's output before it refused a read-write mount nested in a
// read-write one.
func (k *kubeSandbox) genWritable(t *testing.T, pod *corev1.Pod) {
	c := &pod.Spec.Containers[0]
	i := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == genTarget })
	if i < 0 || c.VolumeMounts[i].SubPath == "" {
		t.Fatal("no /gen subPath mount: the weakened wiring needs updating")
	}
	c.VolumeMounts[i].ReadOnly, c.VolumeMounts[i].RecursiveReadOnly = false, nil
}

// homeTarget is where the weakened Pod shows the home (its host path is
// under /var/tmp, which the Pod masks with a read-only emptyDir: no
// runtime can create a mount point there).
const homeTarget = "/home/user"

// withHome adds a hostPath volume of the home, read-only at homeTarget:
// the mount lint calls MOUNT_HOME.
func (k *kubeSandbox) withHome(t *testing.T, pod *corev1.Pod) {
	dir := corev1.HostPathDirectory
	name := pod.Name + "-home"
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
		HostPath: &corev1.HostPathVolumeSource{Path: k.home, Type: &dir}}})
	c := &pod.Spec.Containers[0]
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: name, MountPath: homeTarget, ReadOnly: true})
}

// kubeScenario is one attack on the kubernetes backend: real plays the
// emitted Pod, weak a weakened one, and must see the attack succeed.
type kubeScenario struct {
	name   string
	helper bool // the attack helper in the checkout
	real   func(t *testing.T, k *kubeSandbox)
	weak   func(t *testing.T, k *kubeSandbox)
}

func TestEscapeKubernetes(t *testing.T) {
	start := time.Now()
	s := newSuite(t)
	t.Cleanup(func() { s.removeImages(t) })
	for _, sc := range kubeScenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Run(kube, func(t *testing.T) {
				s.require(t, kube)
				sc.real(t, s.kubeSandbox(t, sc.helper))
			})
			t.Run("weakened-"+kube, func(t *testing.T) {
				s.require(t, kube)
				sc.weak(t, s.kubeSandbox(t, sc.helper))
			})
		})
	}
	t.Logf("escape suite, kubernetes: %s", time.Since(start).Round(time.Millisecond))
}

var kubeScenarios = []kubeScenario{
	{
		// .git and .env.local are the checkout's volume again at a
		// read-only subPath: write, rename or replace them.
		name: "k8s-git-takeover",
		real: func(t *testing.T, k *kubeSandbox) {
			before := k.snapshot(t)
			k.play(t, playOpts{}, kubeGitTakeover(k.sandbox)...).requireDenied(t, kube)
			k.requireUnchanged(t, before)
			k.requireNoCommandRan(t)
		},
		weak: func(t *testing.T, k *kubeSandbox) {
			before := k.snapshot(t)
			steps := kubeGitTakeover(k.sandbox)
			k.play(t, playOpts{how: "Pod without the protected subPath mounts", mutate: k.withoutProtected}, steps...).
				requireSucceeded(t, kube, names(steps)...)
			k.requireChanged(t, before)
			requireMarker(t, k.sandbox, "fresh-git-fsmonitor", "config-fsmonitor", "pre-commit", "post-index-change", "swapped-hooks")
		},
	},
	{
		// The nested source (src/gen, at /gen) swapped for a symlink to
		// the home: the swap may succeed (src is writable), but the next
		// start must not show the home at /gen. A protected entry cannot
		// be swapped at all; swapped out of band, as an attack that got
		// through would have, the next start must not show the home
		// either.
		name: "k8s-symlink-plant",
		real: func(t *testing.T, k *kubeSandbox) {
			before := k.snapshot(t)
			k.play(t, playOpts{}, kubeSymlinkPlant()...).requireDenied(t, kube)
			k.requireUnchanged(t, before)
			next := k.play(t, playOpts{how: "emitted Pod, started again"}, kubeReadThroughPlants()...)
			if fi, err := os.Lstat(filepath.Join(k.root, "src", "gen")); err == nil && fi.Mode()&os.ModeSymlink != 0 {
				t.Logf("kubernetes: the host's src/gen is now a symlink to the home")
				next.requireKubeletRefused(t, "src/gen, the subPath of /gen, leaves the volume")
			} else {
				t.Logf("kubernetes: the swap of src/gen did not reach the host")
				next.requireDenied(t, kube)
			}
			k.requireUnchanged(t, before)
			k.requireNoCommandRan(t)

			// Out of band: src/gen back, .git and .env.local swapped for
			// symlinks to the home.
			gen := filepath.Join(k.root, "src", "gen")
			must(t, os.RemoveAll(gen))
			must(t, os.Mkdir(gen, 0o777))
			must(t, os.Chmod(gen, 0o777))
			must(t, os.Rename(filepath.Join(k.root, ".git"), filepath.Join(k.dir, "git.moved")))
			must(t, os.Symlink(k.home, filepath.Join(k.root, ".git")))
			must(t, os.Remove(filepath.Join(k.root, ".env.local")))
			must(t, os.Symlink(filepath.Join(k.home, ".aws", "credentials"), filepath.Join(k.root, ".env.local")))
			t.Logf("kubernetes: out of band: .git -> %s, .env.local -> ~/.aws/credentials", k.home)
			before = k.snapshot(t)
			k.play(t, playOpts{how: "emitted Pod, protected entries swapped out of band"},
				mustNotLeak("read ~/.aws/credentials through .git", "cat .git/.aws/credentials"),
				mustNotLeak("read ~/.aws/credentials through .env.local", "cat .env.local"),
			).requireKubeletRefused(t, "the subPaths of .git and .env.local leave the volume")
			k.requireUnchanged(t, before)
		},
		weak: func(t *testing.T, k *kubeSandbox) {
			weak := playOpts{how: "Pod with /gen a hostPath of its source", mutate: k.nestedAsHostPath}
			steps := kubeSymlinkPlant()[:1]
			k.play(t, weak, steps...).requireSucceeded(t, kube, names(steps)...)
			weak.how += ", started again"
			o := k.play(t, weak, kubeReadThroughPlants()[0])
			o.requireSucceeded(t, kube, kubeReadThroughPlants()[0].name)
			if !strings.Contains(o.stdout, secret) {
				t.Errorf("weakened kubernetes: the planted credentials were not read through /gen")
			}
		},
	},
	{
		// The nested source swapped for a symlink that stays inside the
		// volume, to the checkout's .git: the kubelet follows a symlink
		// inside the volume, so the next start must still not make .git
		// writable at /gen.
		name: "k8s-symlink-inside-volume",
		real: func(t *testing.T, k *kubeSandbox) {
			// The emitter refuses /gen read-write (what this scenario
			// found): only a read-only nested mount is emitted.
			rw := *k.plan
			rw.Mounts = slices.Clone(k.plan.Mounts)
			for i := range rw.Mounts {
				if rw.Mounts[i].Target == genTarget {
					rw.Mounts[i].Mode = compiler.ReadWrite
				}
			}
			var ne *emit.NotEnforceableError
			if err := kubernetes.Check(&rw); !errors.As(err, &ne) || !strings.Contains(ne.Restriction, "inside another read-write mount") {
				t.Errorf("kubernetes: a read-write /gen inside the read-write /workspace: %v, want it refused", err)
			}
			before := k.snapshot(t)
			k.play(t, playOpts{},
				may("swap src/gen for a symlink to ../.git", "rm -rf src/gen && ln -s ../.git src/gen"),
			).requireDenied(t, kube)
			k.requireUnchanged(t, before)
			next := k.play(t, playOpts{how: "emitted Pod, started again"}, kubeWriteThroughGen(k.sandbox)...)
			if next.refused != "" {
				next.requireKubeletRefused(t, "src/gen is a symlink")
				k.requireUnchanged(t, before)
				k.requireNoCommandRan(t)
				return
			}
			diff := before.diff(k.snapshot(t))
			markers := k.hostGit(t)
			if len(diff) > 0 || len(markers) > 0 || slices.ContainsFunc(names(kubeWriteThroughGen(k.sandbox)), func(n string) bool { return next.results[n].ok }) {
				t.Errorf("ESCAPE (emit/kubernetes): %s\nthe host changed:\n  %s\nhost git ran the attacker's commands: markers %v",
					kubeKnownEscape, strings.Join(diff, "\n  "), markers)
			}
			next.requireDenied(t, kube)
		},
		weak: func(t *testing.T, k *kubeSandbox) {
			weak := playOpts{how: "Pod with /gen the volume at a read-write subPath (as emitted before the fix)", mutate: k.genWritable}
			step := may("swap src/gen for a symlink to ../.git", "rm -rf src/gen && ln -s ../.git src/gen")
			k.play(t, weak, step).requireSucceeded(t, kube, step.name)
			before := k.snapshot(t)
			weak.how += ", started again"
			steps := kubeWriteThroughGen(k.sandbox)
			k.play(t, weak, steps...).requireSucceeded(t, kube, names(steps)...)
			k.requireChanged(t, before)
			requireMarker(t, k.sandbox, "gen-config-fsmonitor", "gen-pre-commit")
		},
	},
	{
		// The host's credentials, where a mount of the home would show
		// them, by their host path and through /proc: not in the Pod
		// (ENOENT), nor the service account's token.
		name: "k8s-host-credentials",
		real: func(t *testing.T, k *kubeSandbox) {
			before := k.snapshot(t)
			k.play(t, playOpts{}, kubeHostCredentials(k.sandbox)...).requireDenied(t, kube)
			k.requireUnchanged(t, before)
			k.requireNoCommandRan(t)
		},
		weak: func(t *testing.T, k *kubeSandbox) {
			steps := kubeHostCredentials(k.sandbox)
			o := k.play(t, playOpts{how: "Pod with a hostPath of the home", mutate: k.withHome}, steps[0])
			o.requireSucceeded(t, kube, steps[0].name)
			if !strings.Contains(o.stdout, secret) {
				t.Errorf("weakened kubernetes: the planted credentials were not read at %s", homeTarget)
			}
		},
	},
	{
		// network: "none" is a deny-all NetworkPolicy; podman ignores
		// NetworkPolicy, so --network none stands for it. A listener on
		// the host's address and one on its loopback must accept nothing.
		name: "k8s-network-none", helper: true,
		real: func(t *testing.T, k *kubeSandbox) {
			before := k.snapshot(t)
			ext, lo := hostListener(t, hostAddr(t)), hostListener(t, "127.0.0.1")
			k.play(t, playOpts{},
				denyWith("connect to the host's listener at "+ext.addr, helperSh("dial", ext.addr), "ENETUNREACH"),
				denyWith("connect to the host's loopback listener at "+lo.addr, helperSh("dial", lo.addr), "ECONNREFUSED"),
			).requireDenied(t, kube)
			ext.requireAccepted(t, "kubernetes (--network none)", false)
			lo.requireAccepted(t, "kubernetes (--network none)", false)
			k.requireUnchanged(t, before)
			k.requireNoCommandRan(t)
		},
		weak: func(t *testing.T, k *kubeSandbox) {
			ext := hostListener(t, hostAddr(t))
			step := denyWith("connect to the host's listener at "+ext.addr, helperSh("dial", ext.addr), "ENETUNREACH")
			k.play(t, playOpts{how: "Pod on podman's default network (no NetworkPolicy enforced)", network: "default"}, step).
				requireSucceeded(t, kube, step.name)
			ext.requireAccepted(t, "weakened kubernetes (podman's default network)", true)
		},
	},
}

// kubeKnownEscape is the escape k8s-symlink-inside-volume found, before
// the emitter refused a read-write mount nested in a read-write one.
const kubeKnownEscape = `a nested read-write source inside a read-write mount is emitted as that mount's volume at a subPath; ` +
	`the server swaps the source (shop/src/gen) for a symlink inside the volume (../.git), and the kubelet, which only refuses ` +
	`a subPath that leaves its volume, binds the checkout's .git read-write at /gen on the next start: the server writes ` +
	`.git/config and .git/hooks, and the user's next git command runs its code on the host`

func kubeGitTakeover(sb *sandbox) []step {
	return append([]step{
		deny("rename .git (mv .git g; then back)", "mv .git g && mv g .git"),
		deny("append to .env.local", `printf 'API_TOKEN=attacker\n' >> .env.local`),
	}, gitTakeover(sb)...)
}

// kubeSymlinkPlant swaps the nested source and the protected entries for
// symlinks to the planted home (shop/src/gen -> ../../../home).
func kubeSymlinkPlant() []step {
	return []step{
		may("swap src/gen for a symlink to the home", "rm -rf src/gen && ln -s ../../../home src/gen"),
		deny("swap .env.local for a symlink to the home", "rm -f .env.local && ln -s ../../home .env.local"),
		deny("swap .git for a symlink to the home", "mv .git .git.old && ln -s ../../home .git"),
	}
}

func kubeReadThroughPlants() []step {
	return []step{
		mustNotLeak("read ~/.aws/credentials through /gen", "cat /gen/.aws/credentials"),
		mustNotLeak("read ~/.aws/credentials through .env.local", "cat .env.local/.aws/credentials"),
		mustNotLeak("read ~/.aws/credentials through .git", "cat .git/.aws/credentials"),
	}
}

// kubeWriteThroughGen writes the checkout's .git through /gen, were /gen
// to show it (where /gen shows what it should, there is no config or
// hooks there, and the step fails).
func kubeWriteThroughGen(sb *sandbox) []step {
	return []step{
		mustNotLeak("set core.fsmonitor through /gen/config", fmt.Sprintf(`test -f /gen/config && printf '[core]\n\tfsmonitor = touch %%s\n' %s >> /gen/config`, shq(sb.marker("gen-config-fsmonitor")))),
		mustNotLeak("plant a pre-commit hook through /gen/hooks", "test -d /gen/hooks && "+hook(sb, "/gen/hooks/pre-commit", "gen-pre-commit")),
	}
}

func kubeHostCredentials(sb *sandbox) []step {
	creds := filepath.Join(sb.home, ".aws", "credentials")
	return []step{
		denyWith("read ~/.aws/credentials at "+homeTarget, "cat "+homeTarget+"/.aws/credentials", "ENOENT"),
		denyWith("read ~/.aws/credentials by its host path", "cat "+shq(creds), "ENOENT"),
		denyWith("read ~/.aws/credentials through /proc/1/root", "cat "+shq("/proc/1/root"+creds), "ENOENT", "EACCES"),
		denyWith("list the home by its host path", "ls "+shq(sb.home), "ENOENT"),
		denyWith("read the service account token", "cat /var/run/secrets/kubernetes.io/serviceaccount/token", "ENOENT"),
	}
}

// listener counts the TCP connections the host accepts at addr.
type listener struct {
	addr     string
	accepted atomic.Int64
}

func hostListener(t *testing.T, ip string) *listener {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	must(t, err)
	l := &listener{addr: ln.Addr().String()}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.accepted.Add(1)
			c.Close()
		}
	}()
	return l
}

func (l *listener) requireAccepted(t *testing.T, who string, want bool) {
	t.Helper()
	time.Sleep(100 * time.Millisecond) // the accept loop's count
	n := l.accepted.Load()
	switch {
	case want && n == 0:
		t.Errorf("%s: the listener at %s accepted nothing: the suite cannot see a connection", who, l.addr)
	case !want && n > 0:
		t.Errorf("%s: the listener at %s accepted %d connection(s) from the server", who, l.addr, n)
	default:
		t.Logf("%s: the listener at %s accepted %d connection(s)", who, l.addr, n)
	}
}

// hostAddr is an IPv4 address of this machine outside loopback and the
// engines' bridges: what a Pod with a network reaches the host by.
func hostAddr(t *testing.T) string {
	t.Helper()
	ifs, err := net.Interfaces()
	must(t, err)
	for _, i := range ifs {
		if i.Flags&net.FlagUp == 0 || i.Flags&net.FlagLoopback != 0 || strings.HasPrefix(i.Name, "docker") ||
			strings.HasPrefix(i.Name, "cni-") || strings.HasPrefix(i.Name, "podman") || strings.HasPrefix(i.Name, "veth") {
			continue
		}
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() {
				return n.IP.String()
			}
		}
	}
	t.Fatal("no IPv4 address outside loopback and the engines' bridges")
	return ""
}
