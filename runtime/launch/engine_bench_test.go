package launch

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"
)

// BenchmarkEnginePrepare is what the launcher does before each engine
// start, on each installed engine: which engine it is, the image's ID,
// VOLUMEs and command, the argv. The container's start is not timed
// (bench's Spawn times whole starts).
func BenchmarkEnginePrepare(b *testing.B) {
	for _, engine := range []string{"docker", "podman"} {
		b.Run("engine="+engine, func(b *testing.B) {
			if _, err := exec.LookPath(engine); err != nil {
				b.Skip(err)
			}
			name := fmt.Sprintf("localhost/mcpolicy-launch-prepare:%d-%d", os.Getpid(), time.Now().UnixNano())
			defer exec.Command(engine, "rmi", "-f", name).Run()
			importImage(b, engine, name, []string{"VOLUME /data", `CMD ["/server"]`})
			e := Engine{Path: engine, Root: b.TempDir(), Home: "/nonexistent", Verifier: "/v", Seccomp: "/proc/self/fd/3"}
			args := []string{"run", "--rm", "-i", "--network", "none", "--read-only", name}
			for b.Loop() {
				if _, err := e.Prepare(args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
