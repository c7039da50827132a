package testenv

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"testing"
	"time"
)

// importWait is how long an engine's import may take before it is taken
// for wedged.
const importWait = 2 * time.Minute

// ImportImage imports the image tarball as tag into engine (docker or
// podman), with the Dockerfile instructions changes (--change). podman 4.3 can wedge its storage lock when commands of other
// test packages run at once (seen beside a kube play; an engine bug): an
// import not ended in two minutes is killed, which frees the lock, and
// tried once more.
func ImportImage(ctx context.Context, engine, tag string, tarball []byte, changes ...string) error {
	args := []string{"import"}
	for _, c := range changes {
		args = append(args, "--change", c)
	}
	args = append(args, "-", tag)
	for try := 1; ; try++ {
		ictx, cancel := context.WithTimeout(ctx, importWait)
		cmd := exec.CommandContext(ictx, engine, args...)
		cmd.Stdin = bytes.NewReader(tarball)
		out, err := cmd.CombinedOutput()
		hung := ictx.Err() != nil && ctx.Err() == nil
		cancel()
		if err == nil {
			return nil
		}
		if !hung || try == 2 {
			return fmt.Errorf("%s import: %v\n%s", engine, err, out)
		}
	}
}

// Import is ImportImage that fails the test.
func Import(ctx context.Context, t testing.TB, engine, tag string, tarball []byte) {
	t.Helper()
	if err := ImportImage(ctx, engine, tag, tarball); err != nil {
		t.Fatal(err)
	}
}
