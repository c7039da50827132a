package kubernetes_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/runtime/probe/probetable"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit/docker"
	"github.com/mcpolicy/mcpolicy/emit/kubernetes"
	"github.com/mcpolicy/mcpolicy/internal/testbin"
	"github.com/mcpolicy/mcpolicy/internal/testenv"
	"github.com/mcpolicy/mcpolicy/project"
	"github.com/mcpolicy/mcpolicy/runtime/probe"
)

// TestPodmanKubePlay runs the emitted Pod through `podman kube play`, with
// the hidden `mcpolicy probe` in place of the server, and checks the
// kernel's answers: the same the docker backend's engine test expects for
// the same grants (credentials ENOENT, project readable, root EROFS, no
// network). A control widens the manifest (the ro mount made rw) and must
// see the widening.
//
// podman does not enforce NetworkPolicy: the Pod is played with
// --network none, which stands for the emitted deny-all policy; that policy
// is checked structurally by TestGolden (a deny-all NetworkPolicy selects
// every Pod), not here.
//
// Without podman the test skips, except under CI=true, where it fails.
func TestPodmanKubePlay(t *testing.T) {
	ctx := requireKubePlay(t, "podman kube play of the emitted Pod")

	probeBin := testbin.Mcpolicy(t) // the probe: a static mcpolicy
	image := importImage(ctx, t, probeBin)

	hostAddr := testenv.LoopbackListener(t)

	root, home := writeProject(t)
	expect := []expectation{
		{"read", "/workspace/data.txt", "ok", "rw grant"},
		{"create", "/workspace/new.txt", "ok", "rw grant"},
		{"read", "/docs/readme.txt", "ok", "ro grant"},
		{"write", "/docs/readme.txt", "EROFS", "ro grant"},
		{"read", filepath.Join(home, ".aws", "credentials"), "ENOENT", "host home not in view"},
		{"read", "/var/run/secrets/kubernetes.io/serviceaccount/token", "ENOENT", "no service account token"},
		{"create", "/x", "EROFS", "read-only root"},
		{"create", "/etc/x", "EROFS", "read-only root"},
		{"create", "/tmp/x", "ok", "scratch"},
		{"create", "/run/x", "EROFS", "read-only root (kube play adds no tmpfs)"},
		{"create", "/var/tmp/x", "EROFS", "masked"},
		{"create", "/dev/shm/x", "EROFS", "masked"},
		{"connect", hostAddr, "ECONNREFUSED", "no network (--network none for the deny-all NetworkPolicy)"},
	}
	command := []string{"/bin/mcpolicy", "probe"}
	for _, x := range expect {
		command = append(command, x.arg())
	}
	cmd, _ := json.Marshal(command)
	policy := fmt.Sprintf(`version: "v1"
servers: probe: {
	image:   %s
	command: %s
	mounts: [
		{source: "proj", target: "/workspace", mode: "rw"},
		{source: "docs", target: "/docs"},
	]
	scratch: {target: "/tmp", size: "16m"}
}
`, strconv.Quote(image), cmd)
	if err := os.WriteFile(filepath.Join(root, "mcpolicy.cue"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	pod := emitPod(t, root, home)
	probetable.Check(t, "podman kube play", expect, kubePlay(ctx, t, pod))

	// Protected entries are the rw mount's volume again at a read-only
	// subPath. podman 4 kube play ignores subPath for a hostPath volume (it
	// mounts the whole volume there): it cannot answer for them, so they
	// run only on podman 5 and later; TestPodShape checks the manifest.
	t.Run("protected-subPath", func(t *testing.T) {
		v := strings.TrimSpace(string(podman(ctx, t, "version", "--format", "{{.Client.Version}}")))
		if major, _, _ := strings.Cut(v, "."); major < "5" || len(major) != 1 {
			t.Skipf("podman %s: kube play ignores subPath for hostPath volumes before podman 5", v)
		}
		for name, data := range map[string]string{".git/config": "[core]\n", ".env": "SECRET=planted\n"} {
			f := filepath.Join(root, "proj", filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(f), 0o777); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f, []byte(data), 0o666); err != nil {
				t.Fatal(err)
			}
		}
		prot := []expectation{
			{"read", "/workspace/.git/config", "ok", "protected, readable"},
			{"write", "/workspace/.git/config", "EROFS", "protected path in rw mount (subPath)"},
			{"write", "/workspace/.env", "EROFS", "protected file in rw mount (subPath)"},
			{"create", "/workspace/new2.txt", "ok", "rw grant beside them"},
		}
		pod := emitPod(t, root, home)
		pod.Name += "-protected"
		pod.Spec.Containers[0].Args = []string{"/bin/mcpolicy", "probe"}
		for _, x := range prot {
			pod.Spec.Containers[0].Args = append(pod.Spec.Containers[0].Args, x.arg())
		}
		probetable.Check(t, "podman kube play, protected entries", prot, kubePlay(ctx, t, pod))
	})

	t.Run("control-docs-rw", func(t *testing.T) {
		wide := pod.DeepCopy()
		c := &wide.Spec.Containers[0]
		found := false
		for i, m := range c.VolumeMounts {
			if m.MountPath == "/docs" && m.ReadOnly {
				c.VolumeMounts[i].ReadOnly, c.VolumeMounts[i].RecursiveReadOnly, found = false, nil, true
			}
		}
		if !found {
			t.Fatal("no read-only mount at /docs")
		}
		x := expectation{"write", "/docs/readme.txt", "ok", "/docs made read-write by hand"}
		c.Args = []string{"/bin/mcpolicy", "probe", x.arg()}
		wide.Name += "-wide"
		probetable.Check(t, "podman kube play, widened", []expectation{x}, kubePlay(ctx, t, wide))
	})
}

// emitPod compiles the project's policy and returns the Pod of its
// manifest, through YAML and strict decoding, with this machine's paths.
func emitPod(t *testing.T, root, home string) *corev1.Pod {
	t.Helper()
	// hostPath: the test's files are on this machine (the default, claims,
	// would be empty podman volumes).
	objs, _ := manifestObjects(t, root, home, kubernetes.Options{HostPath: true})
	pod, ok := objs[0].(*corev1.Pod)
	if !ok {
		t.Fatalf("first object %T, want the Pod", objs[0])
	}
	return pod
}

// manifestObjects compiles the project's first server and returns its
// manifest, as emitted and through YAML and strict decoding, with this
// machine's paths.
func manifestObjects(t *testing.T, root, home string, opts kubernetes.Options) ([]runtime.Object, []byte) {
	t.Helper()
	proj, err := project.Discover(root)
	if err != nil {
		t.Fatal(err)
	}
	plans, err := proj.Compile(home)
	if err != nil {
		t.Fatal(err)
	}
	data, err := kubernetes.Manifest(plans[0], compiler.Machine{ProjectRoot: root, Home: home}, opts)
	if err != nil {
		t.Fatal(err)
	}
	sameAsAPI(t, "podman manifest", data)
	objs, err := decodeStrict(data)
	if err != nil {
		t.Fatal(err)
	}
	return objs, data
}

// kubePlay plays one Pod as it is (kubePlayArgs), waits for its container
// to exit, checks that it ran in the user namespace its hostUsers asks
// for, and returns the probe's answers.
func kubePlay(ctx context.Context, t *testing.T, pod *corev1.Pod) []probe.Result {
	t.Helper()
	name := pod.Name
	f := writePod(t, pod)
	t.Cleanup(func() { podRm(t, pod) })
	podman(ctx, t, kubePlayArgs(pod, "none", f)...)
	ctr := name + "-" + pod.Spec.Containers[0].Name
	if code := strings.TrimSpace(string(podman(ctx, t, "wait", ctr))); code != "0" {
		t.Errorf("the probe exited %s\n%s", code, podman(ctx, t, "logs", ctr))
	}
	checkUserNamespace(ctx, t, pod, ctr)
	out := podman(ctx, t, "logs", ctr)
	prs, err := probe.Decode(out)
	if err != nil {
		t.Fatalf("%v\nwhole output:\n%s", err, out)
	}
	return prs
}

// podRm removes a played Pod and the volumes podman made of its emptyDirs
// (engine-wide, named after them). podman 4.3 with a user namespace
// sometimes fails the first time (unlinkat of the infra container's shm:
// device or resource busy): it is tried again.
func podRm(t *testing.T, pod *corev1.Pod) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out []byte
	var err error
	for range 5 {
		if out, err = exec.CommandContext(ctx, "podman", "pod", "rm", "-f", pod.Name).CombinedOutput(); err == nil {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if err != nil {
		t.Logf("podman pod rm %s: %v\n%s", pod.Name, err, out)
	}
	for _, v := range pod.Spec.Volumes {
		if v.EmptyDir != nil {
			exec.CommandContext(ctx, "podman", "volume", "rm", "-f", v.Name).Run()
		}
	}
}

// kubePlayArgs are podman's arguments to play the manifest file f on the
// network: the file as it is, but for the size of a user namespace.
// hostUsers: false is podman's --userns=auto, which sizes the namespace
// from the image (1024 ids for most: the egress proxy's uid 65532 would
// not be mapped); a kubelet gives each such Pod 65536 ids, which is what
// is asked here, the namespace's mode still the Pod's.
func kubePlayArgs(pod *corev1.Pod, network, f string) []string {
	args := []string{"kube", "play", "--network", network}
	if pod.Spec.HostUsers != nil && !*pod.Spec.HostUsers {
		args = append(args, "--userns", "auto:size=65536")
	}
	return append(args, f)
}

// checkUserNamespace checks that the container ran in a user namespace of
// its own when its Pod says hostUsers: false (no uid of the host's: uid 0
// inside is not 0 outside), in the host's otherwise.
func checkUserNamespace(ctx context.Context, t *testing.T, pod *corev1.Pod, ctr string) {
	t.Helper()
	var ids struct{ UidMap []string }
	out := podman(ctx, t, "inspect", ctr, "--format", "{{json .HostConfig.IDMappings}}")
	if err := json.Unmarshal(out, &ids); err != nil {
		t.Fatalf("%s: ID mappings %q: %v", ctr, out, err)
	}
	m := strings.Join(ids.UidMap, " ")
	own := m != "" && !strings.HasPrefix(m, "0:0:")
	if want := pod.Spec.HostUsers != nil && !*pod.Spec.HostUsers; own != want {
		t.Errorf("%s: uid map %q: a user namespace of its own %v, want %v (hostUsers %v)", ctr, m, own, want, pod.Spec.HostUsers)
	}
}

func podman(ctx context.Context, t *testing.T, args ...string) []byte {
	t.Helper()
	cmd := exec.CommandContext(ctx, "podman", args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("podman %s: %v\nstderr:\n%s\nstdout:\n%s", strings.Join(args, " "), err, stderr.Bytes(), stdout.Bytes())
	}
	return stdout.Bytes()
}

// expectation is one attempt and what the confinement must answer.
type expectation struct{ op, target, want, why string }

func (x expectation) arg() string { return x.op + ":" + x.target }

func (x expectation) Row() (op, target, want, why string) { return x.op, x.target, x.want, x.why }

// importImage imports a one-binary image from a rootfs tar, without any
// registry, under a tag unique to this run, removed at cleanup.
func importImage(ctx context.Context, t *testing.T, probeBin string) string {
	t.Helper()
	return importProbeImage(ctx, t, probeBin, []imageDir{{"bin/", 0o755}, {"etc/", 0o755}, {"run/", 0o755}, {"tmp/", 0o1777},
		{"var/", 0o755}, {"var/tmp/", 0o1777}, {"workspace/", 0o755}, {"docs/", 0o755}})
}

// imageDir is a folder of an imported image, root's, with its mode.
type imageDir struct {
	name string
	mode int64
}

// importProbeImage imports an image of the folders and the probe at
// /bin/mcpolicy.
func importProbeImage(ctx context.Context, t *testing.T, probeBin string, dirs []imageDir) string {
	t.Helper()
	bin, err := os.ReadFile(probeBin)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mtime := time.Unix(0, 0)
	for _, d := range dirs {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d.name, Mode: d.mode, ModTime: mtime, Format: tar.FormatPAX}); err != nil {
			t.Fatal(err)
		}
	}
	return importTar(ctx, t, "mcpolicy-k8s-probe", &buf, tw, "bin/mcpolicy", bin, mtime)
}

// importTar adds the executable file name (bin) to tw, closes it and
// imports buf into podman as a fresh localhost/TAG image, removed when t
// ends: no registry is involved.
func importTar(ctx context.Context, t *testing.T, tag string, buf *bytes.Buffer, tw *tar.Writer, name string, bin []byte, mtime time.Time) string {
	t.Helper()
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o755, Size: int64(len(bin)), ModTime: mtime, Format: tar.FormatPAX}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(bin); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	image := fmt.Sprintf("localhost/%s:test-%d-%d", tag, os.Getpid(), time.Now().UnixNano())
	testenv.Import(ctx, t, "podman", image, buf.Bytes())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if out, err := exec.CommandContext(ctx, "podman", "rmi", "-f", image).CombinedOutput(); err != nil {
			t.Logf("podman rmi %s: %v\n%s", image, err, out)
		}
	})
	return image
}

// writeProject writes a project uid 1000 may write where granted, and a
// home holding a secret outside it.
func writeProject(t *testing.T) (root, home string) {
	t.Helper()
	root, home = t.TempDir(), t.TempDir()
	files := map[string]string{
		filepath.Join(root, "proj", "data.txt"):    "hello",
		filepath.Join(root, "docs", "readme.txt"):  "read me\n",
		filepath.Join(home, ".aws", "credentials"): "[default]\naws_secret_access_key = planted\n",
	}
	for p, s := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o666); err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(p, root) {
			if err := os.Chmod(p, 0o666); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, d := range []string{root, filepath.Join(root, "proj"), filepath.Join(root, "docs")} {
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	return root, home
}

// requireKubePlay skips under -short, and when podman kube play cannot run
// here (fails under CI=true instead); it returns the test's context, bounded.
func requireKubePlay(t *testing.T, what string) context.Context {
	t.Helper()
	testbin.SkipShort(t, what)
	why := testenv.KubePlay(docker.Podman.Runtime())
	if why == "" {
		why = autoUsernsUnavailable()
	}
	if why != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true, so not skipping: %s", why)
		}
		t.Skip(why)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// autoUsernsUnavailable says why a rootful podman cannot give a Pod a user
// namespace (hostUsers: false, --userns=auto) of 65536 ids here: it takes
// them from the subordinate ids of user "containers".
func autoUsernsUnavailable() string {
	if os.Geteuid() != 0 {
		return "" // a rootless podman maps from the user's own subordinate ids
	}
	for _, f := range []string{"/etc/subuid", "/etc/subgid"} {
		data, err := os.ReadFile(f)
		if err != nil {
			return fmt.Sprintf("hostUsers: false plays as podman's --userns=auto, which needs %s: %v", f, err)
		}
		ok := false
		for _, line := range strings.Split(string(data), "\n") {
			if fs := strings.Split(line, ":"); len(fs) == 3 && fs[0] == "containers" {
				if n, err := strconv.ParseUint(fs[2], 10, 32); err == nil && n >= 65536 {
					ok = true
				}
			}
		}
		if !ok {
			return fmt.Sprintf("hostUsers: false plays as podman's --userns=auto, which takes ids from user \"containers\" in %s: add \"containers:2147483647:2147483648\" there", f)
		}
	}
	return ""
}
