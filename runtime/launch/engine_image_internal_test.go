package launch

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// TestKindOfMain: the engine is told apart by its binary's main package;
// anything else (a wrapper, podman-docker's script) is asked instead.
func TestKindOfMain(t *testing.T) {
	for main, want := range map[string][2]bool{
		"github.com/containers/podman/cmd/podman":          {true, true},
		"github.com/containers/podman/v5/cmd/podman":       {true, true},
		"github.com/docker/cli/cmd/docker":                 {false, true},
		"github.com/containers/podman/v5/cmd/rootlessport": {true, false},
		"github.com/containers/podman/a/b/cmd/podman":      {true, false},
		"github.com/example/docker":                        {false, false},
		"":                                                 {false, false},
	} {
		if p, ok := kindOfMain(main); ok != want[1] || ok && p != want[0] {
			t.Errorf("%q: podman %v ok %v, want %v", main, p, ok, want)
		}
	}
}

// TestDockerSocket: the API is asked only on the socket the CLI would
// use; a remote host, a context or TLS leaves it to the CLI.
func TestDockerSocket(t *testing.T) {
	home := t.TempDir()
	ctxHome := t.TempDir()
	os.MkdirAll(filepath.Join(ctxHome, ".docker"), 0o755)
	os.WriteFile(filepath.Join(ctxHome, ".docker", "config.json"), []byte(`{"currentContext": "remote"}`), 0o644)
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"HOME": home}, "/var/run/docker.sock"},
		{map[string]string{"HOME": home, "DOCKER_HOST": "unix:///run/user/1000/docker.sock"}, "/run/user/1000/docker.sock"},
		{map[string]string{"HOME": home, "DOCKER_HOST": "tcp://10.0.0.1:2375"}, ""},
		{map[string]string{"HOME": home, "DOCKER_HOST": "ssh://host"}, ""},
		{map[string]string{"HOME": home, "DOCKER_CONTEXT": "remote"}, ""},
		{map[string]string{"HOME": home, "DOCKER_TLS_VERIFY": "1"}, ""},
		{map[string]string{"HOME": ctxHome}, ""},
	} {
		if got := dockerSocket(func(k string) string { return c.env[k] }); got != c.want {
			t.Errorf("%v: %q, want %q", c.env, got, c.want)
		}
	}
}

// TestFullName: podman's store holds full names; a short one is left to
// podman's own resolution.
func TestFullName(t *testing.T) {
	for ref, want := range map[string]string{
		"localhost/x:1":      "localhost/x:1",
		"localhost/x":        "localhost/x:latest",
		"docker.io/busybox":  "docker.io/library/busybox:latest",
		"quay.io/a/b:2":      "quay.io/a/b:2",
		"localhost:5000/a/b": "localhost:5000/a/b:latest",
		"busybox":            "",
		"library/busybox:1":  "",
		"localhost/Upper:1":  "",
	} {
		got, ok := fullName(ref)
		if !ok {
			got = ""
		}
		if got != want {
			t.Errorf("%q: %q, want %q", ref, got, want)
		}
	}
}

// TestPodmanConfigHashed: a configuration blob is read only if it hashes
// to the image's ID: one edited in the store (other VOLUMEs, another
// command) is not taken, and the CLI is asked instead.
func TestPodmanConfigHashed(t *testing.T) {
	dir := t.TempDir()
	blob := []byte(`{"config":{"Cmd":["/server"],"Volumes":{"/data":{}}}}`)
	sum := sha256.Sum256(blob)
	id := hex.EncodeToString(sum[:])
	file := filepath.Join(dir, id, "="+base64.StdEncoding.EncodeToString([]byte("sha256:"+id)))
	os.MkdirAll(filepath.Dir(file), 0o700)
	if err := os.WriteFile(file, blob, 0o600); err != nil {
		t.Fatal(err)
	}
	info := podmanConfig(dir, id)
	if info == nil || info.ID != "sha256:"+id || len(info.Config.Volumes) != 1 || !reflect.DeepEqual(info.Config.Cmd, []string{"/server"}) {
		t.Fatalf("the control: %+v", info)
	}
	os.WriteFile(file, []byte(`{"config":{"Cmd":["/server"]}}`), 0o600)
	if info := podmanConfig(dir, id); info != nil {
		t.Errorf("a blob that does not hash to the ID was read: %+v", info)
	}
}

// TestNativeInspect: on each installed engine, the image's ID and
// configuration are read without the CLI (docker's API, podman's store)
// and are the CLI's own answer; a tag moved to another image is followed.
func TestNativeInspect(t *testing.T) {
	if testing.Short() {
		t.Skip("imports images into the engines")
	}
	for _, engine := range []string{"docker", "podman"} {
		t.Run(engine, func(t *testing.T) {
			path, err := exec.LookPath(engine)
			if err != nil {
				t.Skip(err)
			}
			podman, ok := builtKind(path)
			if !ok || podman != (engine == "podman") {
				t.Skipf("%s is not the engine's own CLI", path)
			}
			name := fmt.Sprintf("localhost/mcpolicy-launch-inspect:%d-%d", os.Getpid(), time.Now().UnixNano())
			defer exec.Command(engine, "rmi", "-f", name).Run()
			for i, changes := range [][]string{
				{"VOLUME /data", `CMD ["/server", "a"]`},
				{"VOLUME /data", "VOLUME /cache", `ENTRYPOINT ["/entry"]`},
			} {
				importImage(t, engine, name, changes)
				var native *imageInfo
				if podman {
					native = podmanStoreImage(name)
				} else {
					native = dockerAPIImage(name)
				}
				if native == nil {
					t.Fatalf("image %d: not read without the CLI", i)
				}
				cli, err := inspectCLI(engine, podman, name)
				if err != nil {
					t.Fatal(err)
				}
				if native.ID != cli.ID || !reflect.DeepEqual(native.Config, cli.Config) {
					t.Errorf("image %d: read %+v, the CLI says %+v", i, native, cli)
				}
			}
		})
	}
}

// importImage imports a one-file image as name, with Dockerfile changes.
func importImage(t testing.TB, engine, name string, changes []string) {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	tw.WriteHeader(&tar.Header{Name: "server", Mode: 0o755, Size: int64(len(name))})
	tw.Write([]byte(name))
	tw.Close()
	args := []string{"import"}
	for _, c := range changes {
		args = append(args, "--change", c)
	}
	cmd := exec.Command(engine, append(args, "-", name)...)
	cmd.Stdin = &b
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s import: %v\n%s", engine, err, out)
	}
}

// TestGoMain: the main package is read from a Go binary's build
// information, as debug/buildinfo reads it; a script or a non-Go file
// gives none.
func TestGoMain(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bins := []string{self}
	for _, e := range []string{"docker", "podman", "go"} {
		if p, err := exec.LookPath(e); err == nil {
			bins = append(bins, p)
		}
	}
	for _, p := range bins {
		bi, err := buildinfo.ReadFile(p)
		if err != nil {
			continue // not a Go binary
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := goMain(f)
		f.Close()
		if !ok || got != bi.Path {
			t.Errorf("%s: %q %v, want %q", p, got, ok, bi.Path)
		}
	}
	script := filepath.Join(t.TempDir(), "docker")
	os.WriteFile(script, []byte("#!/bin/sh\nexec podman \"$@\"\n"), 0o755)
	if podman, ok := builtKind(script); ok {
		t.Errorf("a script: podman %v, want it asked", podman)
	}
}

// TestStorageConf: the keys that place podman's image store are read from
// a storage.conf; one the launcher cannot read plainly sends it to the CLI.
func TestStorageConf(t *testing.T) {
	conf := `# a comment
[storage]
driver = "overlay"   # the default
runroot = "/run/containers/storage"
graphroot = '/srv/containers'
rootless_storage_path = "$HOME/.local/share/containers/storage"

[storage.options]
additionalimagestores = [
  "/usr/lib/containers/storage",
]
graphroot = "/elsewhere"
`
	kv, ok := storageConf([]byte(conf))
	want := map[string]string{"driver": "overlay", "graphroot": "/srv/containers", "rootless_storage_path": "$HOME/.local/share/containers/storage"}
	if !ok || !reflect.DeepEqual(kv, want) {
		t.Errorf("%v %v, want %v", kv, ok, want)
	}
	for _, bad := range []string{"[storage]\ngraphroot = \"/a\\\"b\"\n", "[storage]\ngraphroot = [\"/a\"]\n", "[storage]\ndriver = \"overlay\" x\n"} {
		if kv, ok := storageConf([]byte(bad)); ok {
			t.Errorf("%q: read as %v", bad, kv)
		}
	}
}

// TestStorageConfOtherSpellings: TOML places a key of the [storage]
// table in other spellings too (a dotted or quoted key, a quoted table
// name, an inline table), which podman's reader takes: the launcher reads
// each as podman does or sends the launcher to the CLI, never reads the
// default store while podman uses another.
func TestStorageConfOtherSpellings(t *testing.T) {
	for _, conf := range []string{
		"storage.graphroot = \"/srv\"\n",
		"storage . graphroot = \"/srv\"\n",
		"\"storage\".graphroot = \"/srv\"\n",
		"storage = { graphroot = \"/srv\" }\n",
		"[storage]\n\"graphroot\" = \"/srv\"\n",
		"[storage]\n'graphroot' = \"/srv\"\n",
		"[\"storage\"]\ngraphroot = \"/srv\"\n",
		"[ 'storage' ]\ngraphroot = \"/srv\"\n",
		"[storage]\n\"driver\" = \"vfs\"\n",
		"[storage]\n\"imagestore\" = \"/srv\"\n",
	} {
		if kv, ok := storageConf([]byte(conf)); ok && kv["graphroot"] != "/srv" {
			t.Errorf("%q: read as %v, podman reads graphroot, driver or imagestore there", conf, kv)
		}
	}
}
