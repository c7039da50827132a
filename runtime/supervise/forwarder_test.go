package supervise_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/testbin"
	"github.com/mcpolicy/mcpolicy/runtime/supervise"
)

// TestForwarderBeside: the forwarder bound into a sandbox is the small
// launcher installed beside mcpolicy, and mcpolicy itself when there is
// none (or it is not executable).
func TestForwarderBeside(t *testing.T) {
	testbin.SkipShort(t, "builds mcpolicy-launch")
	dir := t.TempDir()
	self := filepath.Join(dir, "mcpolicy")
	launcher := filepath.Join(dir, "mcpolicy-launch")
	testbin.Install(t, testbin.Launch(t), self) // any static executable
	if got, err := supervise.ForwarderBeside(self); err != nil || got != self {
		t.Errorf("alone: %q, %v; want %q", got, err, self)
	}
	testbin.Install(t, testbin.Launch(t), launcher)
	if got, err := supervise.ForwarderBeside(self); err != nil || got != launcher {
		t.Errorf("beside the launcher: %q, %v; want %q", got, err, launcher)
	}
	os.Chmod(launcher, 0o644)
	if got, err := supervise.ForwarderBeside(self); err != nil || got != self {
		t.Errorf("beside a launcher that cannot run: %q, %v; want %q", got, err, self)
	}
}
