package supervise_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/runtime/supervise"
)

// TestEgressSocketFolderOutsideWritableGrants: with $TMPDIR inside the
// project the server writes (and no runtime directory), the proxy's socket
// folder would be the server's to swap for a link (the chmods that open
// the socket to a sidecar would then change a file the link names), or to
// fill with a socket of its own: the start is refused, and nothing is made
// there.
func TestEgressSocketFolderOutsideWritableGrants(t *testing.T) {
	// Short: a longer TMPDIR is not used for sockets (the path's limit).
	proj, err := os.MkdirTemp("/tmp", "p")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(proj) })
	tmp := filepath.Join(proj, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_RUNTIME_DIR", "")
	t.Setenv("TMPDIR", tmp)
	p := &compiler.Plan{Server: "s",
		Network: compiler.Network{Mode: "allowlist", Allow: compiler.MustDestinations("api.test:443")},
		Mounts:  []compiler.Mount{{Source: compiler.HostPath{Base: compiler.ProjectRoot, Rel: "."}, Target: "/w", Mode: compiler.ReadWrite}}}
	var stop func()
	_, _, stop, err = supervise.StartProxy(p, supervise.Options{Machine: compiler.Machine{ProjectRoot: proj}}, true)
	if err == nil {
		stop()
	}
	if err == nil || !strings.Contains(err.Error(), "outside every read-write grant") {
		t.Errorf("egress socket folder in the server's grant: %v", err)
	}
	if made, _ := filepath.Glob(filepath.Join(tmp, "mcpolicy-egress-*")); len(made) > 0 {
		t.Errorf("made %v inside the server's grant", made)
	}
}
