package argv

import (
	"regexp"
	"testing"
)

// TestIsWinAbs: the drive-path test is the pattern it replaced,
// ^[A-Za-z]:[\\/], on every string of up to three bytes around it.
func TestIsWinAbs(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z]:[\\/]`)
	alphabet := []byte{'C', 'c', 'z', 'Z', '@', '[', '`', '{', '0', ':', '\\', '/', 'x', 0x80}
	var try func(s []byte)
	try = func(s []byte) {
		if got, want := IsWinAbs(string(s)), re.MatchString(string(s)); got != want {
			t.Errorf("IsWinAbs(%q) = %v, the pattern says %v", s, got, want)
		}
		if len(s) == 4 {
			return
		}
		for _, c := range alphabet {
			try(append(s, c))
		}
	}
	try(nil)
}

// TestEngineSocket: containerd's, CRI-O's and BuildKit's sockets are
// engine sockets as docker's and podman's are (issue 35); a file named
// like one in a longer name is not.
func TestEngineSocket(t *testing.T) {
	for p, want := range map[string]bool{
		"/var/run/docker.sock": true, "/run/podman/podman.sock": true, "/run/containerd/containerd.sock": true,
		"/var/run/crio/crio.sock": true, "/run/buildkit/buildkitd.sock": true, `\\.\pipe\docker_engine`: true,
		"/run/containerd/containerd.sock.ttrpc": false, "/tmp/mydocker.sock": false, "/run/user/1000/bus": false,
	} {
		if got := EngineSocket(p); got != want {
			t.Errorf("EngineSocket(%q) = %v, want %v", p, got, want)
		}
	}
}
