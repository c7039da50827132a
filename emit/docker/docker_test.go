package docker

import (
	"encoding/csv"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
)

func plan(mounts ...compiler.Mount) *compiler.Plan {
	return &compiler.Plan{
		Server: "s", Image: "img:1", User: compiler.User{UID: 1000, GID: 1000},
		Mounts: mounts, Network: compiler.Network{Mode: "none"}, Hash: "sha256:00",
	}
}

// mountSource reads a --mount value the way docker and podman do.
func mountSource(t *testing.T, spec string) (source string, readonly bool) {
	t.Helper()
	r := csv.NewReader(strings.NewReader(spec))
	fields, err := r.Read()
	if err != nil {
		t.Fatalf("--mount %q does not parse as CSV: %v", spec, err)
	}
	for _, f := range fields {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "source":
			source = v
		case "readonly":
			readonly = true
		}
	}
	return source, readonly
}

func TestMountSourcesSurviveCSV(t *testing.T) {
	for _, dir := range []string{"/p/plain", "/p/with space", "/p/a,b", `/p/q"uote`, "/p/c:o=l", `/p/all, "x:y=z`, " /p/lead"} {
		p := plan(compiler.Mount{Source: compiler.HostPath{Base: compiler.Absolute, Rel: dir}, Target: "/w", Mode: compiler.ReadOnly})
		args, err := Args(p, compiler.Placeholders{})
		if err != nil {
			t.Fatal(err)
		}
		i := slices.Index(args, "--mount")
		src, ro := mountSource(t, args[i+1])
		if src != dir || !ro {
			t.Errorf("%q: --mount %s reads back as source %q readonly=%v", dir, args[i+1], src, ro)
		}
	}
}

func TestSeedSubtractions(t *testing.T) {
	p := plan(compiler.Mount{Source: compiler.HostPath{Base: compiler.ProjectRoot, Rel: "."}, Target: "/workspace", Mode: compiler.ReadWrite})
	p.Scratch = &compiler.Scratch{Target: "/tmp", SizeBytes: 256 << 20}
	args, err := Args(p, compiler.Placeholders{})
	if err != nil {
		t.Fatal(err)
	}
	line := " " + strings.Join(args, " ") + " "
	for _, want := range []string{
		" run --rm -i ", " --network none ", " --read-only ", " --cap-drop ALL ",
		" --security-opt no-new-privileges ", " --user 1000:1000 ",
		" --tmpfs /tmp:rw,nosuid,nodev,noexec,size=256m ",
		" --mount type=bind,source=${PROJECT_ROOT},target=/workspace ",
		" --label org.mcpolicy.plan=sha256:00 img:1",
	} {
		if !strings.Contains(line, want) {
			t.Errorf("args lack %q:\n%s", want, line)
		}
	}
	for _, never := range []string{"-t", "-d", "--tty", "--detach", "--privileged", "--cap-add", "-v"} {
		if slices.Contains(args, never) {
			t.Errorf("args contain %s", never)
		}
	}
	if strings.Count(line, " --mount ") != 1 {
		t.Errorf("want exactly one mount, got:\n%s", line)
	}
}

// TestEgressWiring: an allowlist never opens the network: the server joins
// the sidecar's namespace (loopback only) and is pointed at the proxy; the
// sidecar has no network, every subtraction, and only the forwarder.
func TestEgressWiring(t *testing.T) {
	p := plan()
	p.Network = compiler.Network{Mode: "allowlist", Allow: compiler.MustDestinations("api.github.com:443"), ProxyPort: 24000}
	m := compiler.Machine{ProjectRoot: "/p", Home: "/h", Self: "/opt/mcpolicy", EgressSocket: "/tmp/e/egress.sock"}
	args, err := ServerArgs(p, m, "container:side-1")
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Join(args, " ")
	for _, want := range []string{"--network container:side-1", "-e HTTPS_PROXY=http://127.0.0.1:24000", "-e no_proxy=localhost,127.0.0.1,::1", "--cap-drop ALL", "--read-only"} {
		if !strings.Contains(line, want) {
			t.Errorf("server args lack %q:\n%s", want, line)
		}
	}
	if strings.Contains(line, "egress.sock") || strings.Contains(line, "--network none") {
		t.Errorf("the server itself gets the socket or its own network:\n%s", line)
	}
	side, err := SidecarArgs(p, m, "side-1")
	if err != nil {
		t.Fatal(err)
	}
	sline := strings.Join(side, " ")
	for _, want := range []string{"--name side-1", "--network none", "--read-only", "--cap-drop ALL", "--security-opt no-new-privileges", "--user 1000:1000",
		"type=bind,source=/opt/mcpolicy,target=/.mcpolicy/mcpolicy,readonly", "type=bind,source=/tmp/e/egress.sock,target=/.mcpolicy/egress.sock,readonly",
		"--entrypoint /.mcpolicy/mcpolicy", "egress-forward --port 24000 --socket /.mcpolicy/egress.sock --lifeline"} {
		if !strings.Contains(sline, want) {
			t.Errorf("sidecar args lack %q:\n%s", want, sline)
		}
	}
	if _, err := SidecarArgs(plan(), m, "x"); err == nil {
		t.Error("a plan without an allowlist got a sidecar")
	}
}

func TestRefusesWhatItCannotEnforce(t *testing.T) {
	var ne *emit.NotEnforceableError
	p := plan()
	p.Image = ""
	if _, err := Args(p, compiler.Placeholders{}); !errors.As(err, &ne) {
		t.Errorf("no image: got %v", err)
	}
	p = plan(compiler.Mount{Source: compiler.HostPath{Base: compiler.Absolute, Rel: "/a\nb"}, Target: "/w", Mode: compiler.ReadOnly})
	var ue *emit.UnsafeStringError
	if _, err := Args(p, compiler.Placeholders{}); !errors.As(err, &ue) {
		t.Errorf("newline in a path: got %v", err)
	}
	p = plan()
	p.Command = []string{"node", "x\x00y"}
	if _, err := Args(p, compiler.Placeholders{}); !errors.As(err, &ue) {
		t.Errorf("NUL in argv: got %v", err)
	}
}

func TestProtectedMountsAreReadOnlyAndAfterTheirParent(t *testing.T) {
	root := compiler.HostPath{Base: compiler.ProjectRoot, Rel: "."}
	p := plan(compiler.Mount{Source: root, Target: "/w", Mode: compiler.ReadWrite})
	p.Protected = []compiler.Protected{{Source: root.Join(".git/config"), Target: "/w/.git/config", Name: ".git/config"}}
	args, err := Args(p, compiler.Placeholders{})
	if err != nil {
		t.Fatal(err)
	}
	var specs []string
	for i, a := range args {
		if a == "--mount" {
			specs = append(specs, args[i+1])
		}
	}
	want := []string{"type=bind,source=${PROJECT_ROOT},target=/w", "type=bind,source=${PROJECT_ROOT}/.git/config,target=/w/.git/config,readonly"}
	if !slices.Equal(specs, want) {
		t.Errorf("mounts = %q\nwant     %q", specs, want)
	}
}

// TestLauncherRequirementsAreLabels: the names the policy unprotects and
// the programs the entry must pin are labels in the run arguments, after
// the plan's and before the image: the launcher compares the entry's
// arguments with the artefact word for word, so they are pinned with it,
// and the engines run the arguments as they are.
func TestLauncherRequirementsAreLabels(t *testing.T) {
	p := plan(compiler.Mount{Source: compiler.HostPath{Base: compiler.ProjectRoot, Rel: "."}, Target: "/workspace", Mode: compiler.ReadWrite})
	p.Unprotected = []compiler.Unprotection{{Name: ".git"}, {Name: ".vscode"}}
	p.ProgramPins = []compiler.HostPath{{Base: compiler.ProjectRoot, Rel: "bin/x"}}
	a, err := Args(p, compiler.Placeholders{})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.Index(a, LabelPlan+"="+p.Hash)
	want := []string{LabelPlan + "=" + p.Hash, "--label", LabelUnprotect + "=.git", "--label", LabelUnprotect + "=.vscode",
		"--label", LabelProgramPin + "=${PROJECT_ROOT}/bin/x", "img:1"}
	if i < 0 || !slices.Equal(a[i:], want) {
		t.Errorf("args end %q, want %q", a[max(i, 0):], want)
	}
}
