// Package bench measures what confinement costs at spawn time: each
// sub-benchmark of BenchmarkSpawn starts one short-lived process under one
// launch and waits for it to exit. The sub-benchmarks are named launch=X so
// benchstat can put each launch in a column:
//
//	go test ./bench -run '^$' -bench Spawn -count 10 > spawn.txt
//	benchstat -col /launch spawn.txt
//
// bare runs /usr/bin/true; mcpolicy-version is the Go runtime and package
// init of the mcpolicy binary alone; mcpolicy-exec adds compiling the policy,
// the namespaces and the Landlock ruleset; bwrap runs the emitted argv; docker
// and podman run the emitted args on an image holding only a static mcpolicy
// (running `mcpolicy version`); mcpolicy-run-egress-bwrap is `mcpolicy run`
// for a plan with an egress allowlist, mcpolicy-run-credential-bwrap the
// same with a credential bound to its destination. mcpolicy-launch-verified,
// mcpolicy-launch-bwrap and mcpolicy-launch-ENGINE are what client entries
// run: the launcher checks the artefact's digest and the mount sources,
// then starts the same confinement (compare with mcpolicy-launch, bwrap and
// ENGINE). mcpolicy-launch-proc is mcpolicy-launch for a plan with proc:
// the cost of the server's own /proc. A launch whose tool is missing is
// skipped. BenchmarkInitialize (initialize_test.go) times a real MCP
// server to its initialize answer, per backend beside its unconfined start.
package bench

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/emit/bwrap"
	"github.com/mcpolicy/mcpolicy/emit/docker"
	"github.com/mcpolicy/mcpolicy/emit/landlock"
	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/testbin"
	"github.com/mcpolicy/mcpolicy/project"
)

// What TestMain removes at the end: the imported images and the
// fixtures.
var (
	cleanupMu sync.Mutex
	cleanups  []func()
)

func atExit(f func()) {
	cleanupMu.Lock()
	defer cleanupMu.Unlock()
	cleanups = append(cleanups, f)
}

func TestMain(m *testing.M) {
	code := m.Run()
	for i := len(cleanups) - 1; i >= 0; i-- {
		cleanups[i]()
	}
	os.Exit(code)
}

// mcpolicyBinary is the static mcpolicy: it runs on the host and, as the
// only file of the image, in the containers.
func mcpolicyBinary() (string, error) { return testbin.Path(testbin.McpolicyPkg) }

// launcherBinary is the small launcher that runs committed rulesets.
func launcherBinary() (string, error) { return testbin.Path(testbin.LaunchPkg) }

// spawnPolicy is one server running true(1), with one read-only mount of the
// policy's folder and no scratch. The image is for the container launches.
const spawnPolicy = `version: "v1"
servers: s: {
	image:   "localhost/mcpolicy-bench:spawn"
	command: ["/usr/bin/true"]
	mounts: [{source: ".", target: "/data"}]
}
`

// fixture is the policy folder and its compiled plan.
type fixture struct {
	dir     string
	plan    *compiler.Plan
	machine compiler.Machine
}

var spawnFixture = sync.OnceValues(func() (*fixture, error) {
	dir, err := os.MkdirTemp("", "mcpolicy-bench-policy-")
	if err != nil {
		return nil, err
	}
	atExit(func() { os.RemoveAll(dir) })
	// A root launcher runs the server as the plan's 1000:1000, which must
	// reach the grant (the policy's folder).
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "mcpolicy.cue"), []byte(spawnPolicy), 0o644); err != nil {
		return nil, err
	}
	proj, err := project.Discover(dir)
	if err != nil {
		return nil, err
	}
	home, _ := os.UserHomeDir()
	plans, err := proj.Compile(home)
	if err != nil {
		return nil, err
	}
	return &fixture{dir: dir, plan: plans[0], machine: compiler.Machine{ProjectRoot: proj.Root, Home: home}}, nil
})

func BenchmarkSpawn(b *testing.B) {
	fx, err := spawnFixture()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("launch=bare", func(b *testing.B) {
		loop(b, "/usr/bin/true")
	})
	b.Run("launch=mcpolicy-version", func(b *testing.B) {
		loop(b, binary(b), "version")
	})
	b.Run("launch=mcpolicy-exec", func(b *testing.B) {
		loop(b, binary(b), "exec", "--policy", fx.dir, "--server", "s", "--", "/usr/bin/true")
	})
	// mcpolicy-launch-proc is mcpolicy-launch with proc: the launcher
	// also mounts a procfs of the server's own PID namespace (issue #34).
	for _, proc := range []bool{false, true} {
		b.Run("launch=mcpolicy-launch"+map[bool]string{true: "-proc"}[proc], func(b *testing.B) {
			launcher, err := launcherBinary()
			if err != nil {
				b.Fatal(err)
			}
			p := *fx.plan
			p.Proc = proc
			rs, err := landlock.Build(&p, fx.machine)
			if err != nil {
				b.Fatal(err)
			}
			file := filepath.Join(fx.dir, fmt.Sprintf("ruleset-proc-%v.json", proc))
			if err := os.WriteFile(file, rs.JSON(), 0o644); err != nil {
				b.Fatal(err)
			}
			loop(b, launcher, file)
		})
	}
	// What client entries run: the launcher checks the artefact's digest
	// (and, for bwrap, opens every source without following symlinks and
	// passes it by descriptor) before it starts the same confinement.
	b.Run("launch=mcpolicy-launch-verified", func(b *testing.B) {
		launcher, err := launcherBinary()
		if err != nil {
			b.Fatal(err)
		}
		rs, err := landlock.Build(fx.plan, compiler.Placeholders{})
		if err != nil {
			b.Fatal(err)
		}
		file := filepath.Join(fx.dir, ".mcpolicy", "landlock", "s.json")
		os.MkdirAll(filepath.Dir(file), 0o755)
		if err := os.WriteFile(file, rs.JSON(), 0o644); err != nil {
			b.Fatal(err)
		}
		loop(b, launcher, "--sha256", artefact.Digest(rs.JSON()), file)
	})
	b.Run("launch=mcpolicy-launch-bwrap", func(b *testing.B) {
		lookPath(b, "bwrap")
		launcher, err := launcherBinary()
		if err != nil {
			b.Fatal(err)
		}
		spec, err := bwrap.Spec(fx.plan)
		if err != nil {
			b.Fatal(err)
		}
		file := filepath.Join(fx.dir, ".mcpolicy", "bwrap", "s.json")
		os.MkdirAll(filepath.Dir(file), 0o755)
		if err := os.WriteFile(file, spec, 0o644); err != nil {
			b.Fatal(err)
		}
		loop(b, launcher, "--sha256", artefact.Digest(spec), file)
	})
	b.Run("launch=bwrap", func(b *testing.B) {
		path := lookPath(b, "bwrap")
		args, err := bwrap.Args(fx.plan, fx.machine, bwrap.DetectLayout(), 0)
		if err != nil {
			b.Fatal(err)
		}
		loop(b, path, args...)
	})
	// mcpolicy run with an egress allowlist under bwrap: compiling, the
	// proxy, the socket folder, the forwarder in front of the server.
	b.Run("launch=mcpolicy-run-egress-bwrap", func(b *testing.B) {
		lookPath(b, "bwrap")
		dir := filepath.Join(fx.dir, "egress")
		os.MkdirAll(dir, 0o755)
		policy := strings.Replace(spawnPolicy, `command: ["/usr/bin/true"]`, `command: ["/usr/bin/true"]
	network: allow: ["api.example.com:443"]`, 1)
		if err := os.WriteFile(filepath.Join(dir, "mcpolicy.cue"), []byte(policy), 0o644); err != nil {
			b.Fatal(err)
		}
		loop(b, binary(b), "run", "--policy", dir, "--server", "s", "--backend", "bwrap", "--log", os.DevNull)
	})
	// The same with a credential bound to the destination: its value read
	// at spawn, a placeholder drawn, the proxy's session CA made and bound
	// into the sandbox with the trust variables (issue 41).
	b.Run("launch=mcpolicy-run-credential-bwrap", func(b *testing.B) {
		lookPath(b, "bwrap")
		dir := filepath.Join(fx.dir, "credential")
		os.MkdirAll(dir, 0o755)
		policy := strings.Replace(spawnPolicy, `command: ["/usr/bin/true"]`, `command: ["/usr/bin/true"]
	network: allow: ["api.example.com:443"]
	credentials: GITHUB_TOKEN: to: ["api.example.com:443"]`, 1)
		if err := os.WriteFile(filepath.Join(dir, "mcpolicy.cue"), []byte(policy), 0o644); err != nil {
			b.Fatal(err)
		}
		b.Setenv("GITHUB_TOKEN", "ghp_R3alT0kenValue0123456789abcdefABCD")
		loop(b, binary(b), "run", "--policy", dir, "--server", "s", "--backend", "bwrap", "--log", os.DevNull)
	})
	for _, engine := range []string{"docker", "podman"} {
		// The emitted args on an image holding only a static mcpolicy.
		engineArgs := func(b *testing.B) (path string, args, raw []string) {
			path = lookPath(b, engine)
			image, err := engineImage(engine)
			if err != nil {
				b.Skip(err)
			}
			p := *fx.plan
			p.Image, p.Command = image, []string{"/mcpolicy", "version"}
			args, err = docker.Args(&p, fx.machine)
			if err != nil {
				b.Fatal(err)
			}
			raw, err = docker.Args(&p, compiler.Placeholders{}) // the artefact
			if err != nil {
				b.Fatal(err)
			}
			return path, args, raw
		}
		b.Run("launch="+engine, func(b *testing.B) {
			path, args, _ := engineArgs(b)
			loop(b, path, args...)
		})
		b.Run("launch=mcpolicy-launch-"+engine, func(b *testing.B) {
			path, args, raw := engineArgs(b)
			launcher, err := launcherBinary()
			if err != nil {
				b.Fatal(err)
			}
			// The entry pins the artefact its arguments come from.
			file, data := filepath.Join(fx.dir, ".mcpolicy", "docker", "s.json"), emit.JSONArgs(raw)
			os.MkdirAll(filepath.Dir(file), 0o755)
			if err := os.WriteFile(file, data, 0o644); err != nil {
				b.Fatal(err)
			}
			loop(b, launcher, append([]string{"--engine", path, "--project-root", fx.dir, "--sha256", artefact.Digest(data), file, "--"}, args...)...)
		})
	}
}

// loop starts name with args and waits for it, once per iteration. Output
// goes to /dev/null, so no pipe or copying goroutine is timed; on failure
// the command runs once more to show what it said.
func loop(b *testing.B, name string, args ...string) {
	b.Helper()
	for b.Loop() {
		if err := exec.Command(name, args...).Run(); err != nil {
			out, _ := exec.Command(name, args...).CombinedOutput()
			b.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
	}
}

func binary(b *testing.B) string {
	b.Helper()
	bin, err := mcpolicyBinary()
	if err != nil {
		b.Fatal(err)
	}
	return bin
}

func lookPath(b *testing.B, name string) string {
	b.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		b.Skipf("%s is not installed: %v", name, err)
	}
	return path
}

// engineImage imports the spawn image into engine once per run, and removes
// it at the end.
func engineImage(engine string) (string, error) {
	imagesMu.Lock()
	defer imagesMu.Unlock()
	if im, ok := images[engine]; ok {
		return im.name, im.err
	}
	name, err := importImage(engine)
	images[engine] = imported{name, err}
	return name, err
}

type imported struct {
	name string
	err  error
}

var (
	imagesMu sync.Mutex
	images   = map[string]imported{}
)

// importImage checks that the engine answers, then imports a rootfs holding
// only /mcpolicy (static) and the folders the emitted args mount over.
func importImage(engine string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, engine, "info").CombinedOutput(); err != nil {
		return "", fmt.Errorf("%s does not answer: %v\n%s", engine, err, out)
	}
	bin, err := mcpolicyBinary()
	if err != nil {
		return "", err
	}
	rootfs, err := rootfsTar(bin)
	if err != nil {
		return "", err
	}
	name := fmt.Sprintf("localhost/mcpolicy-bench:spawn-%d", os.Getpid())
	cmd := exec.CommandContext(ctx, engine, "import", "-", name)
	cmd.Stdin = bytes.NewReader(rootfs)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%s import: %v\n%s", engine, err, out)
	}
	atExit(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if out, err := exec.CommandContext(ctx, engine, "rmi", "-f", name).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "%s rmi %s: %v\n%s", engine, name, err, out)
		}
	})
	return name, nil
}

// rootfsTar is a tar of /mcpolicy and empty /data, /etc, /run, /tmp, /var/tmp.
func rootfsTar(bin string) ([]byte, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mtime := time.Unix(0, 0)
	for _, d := range []struct {
		name string
		mode int64
	}{{"data/", 0o755}, {"etc/", 0o755}, {"run/", 0o755}, {"tmp/", 0o1777}, {"var/", 0o755}, {"var/tmp/", 0o1777}} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d.name, Mode: d.mode, ModTime: mtime}); err != nil {
			return nil, err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "mcpolicy", Mode: 0o755, Size: int64(len(data)), ModTime: mtime}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(data); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
