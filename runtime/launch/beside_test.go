package launch_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpolicy/mcpolicy/runtime/launch"
)

// TestLauncherBeside: exec hands its launch over only to a launcher
// beside it that no read-write grant holds, reached through a symlink or
// not; none there, or a folder of that name, keeps the launch in-process.
func TestLauncherBeside(t *testing.T) {
	dir := t.TempDir()
	bin, grant := filepath.Join(dir, "bin"), filepath.Join(dir, "proj", "tools")
	for _, d := range []string{bin, grant} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	exe := filepath.Join(bin, "mcpolicy")
	launcher := filepath.Join(bin, launch.LauncherName)
	if got := launch.LauncherBeside(exe, nil); got != "" {
		t.Errorf("no launcher beside: %q", got)
	}
	if err := os.WriteFile(launcher, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := launch.LauncherBeside(exe, []string{grant}); got != launcher {
		t.Errorf("a launcher outside the grants: %q, want %s", got, launcher)
	}
	if got := launch.LauncherBeside(exe, []string{bin}); got != "" {
		t.Errorf("a launcher inside a read-write grant was handed the launch: %q", got)
	}
	// A link beside mcpolicy to a launcher a server may write.
	os.Remove(launcher)
	planted := filepath.Join(grant, launch.LauncherName)
	if err := os.WriteFile(planted, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(planted, launcher); err != nil {
		t.Fatal(err)
	}
	if got := launch.LauncherBeside(exe, []string{grant}); got != "" {
		t.Errorf("a link to a launcher inside a read-write grant was handed the launch: %q", got)
	}
	os.Remove(launcher)
	if err := os.Mkdir(launcher, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := launch.LauncherBeside(exe, nil); got != "" {
		t.Errorf("a folder named %s: %q", launch.LauncherName, got)
	}
}
