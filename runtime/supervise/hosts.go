package supervise

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/mcpolicy/mcpolicy/internal/hostfile"
	"github.com/mcpolicy/mcpolicy/runtime/egress"
	"github.com/mcpolicy/mcpolicy/runtime/launch"
)

// ReadHosts reads --hosts FILE, refusing one a server of the project may
// write: named inside a read-write grant, or reached there through a
// link (the real path of the opened file is checked, and a hard link,
// which has no one real path, is refused).
func ReadHosts(file string, grants []string) (egress.Hosts, error) {
	f, fi, err := hostfile.OpenRegular(file) // a FIFO named there held run before it looked
	if err != nil {
		return nil, fmt.Errorf("--hosts: %w", err)
	}
	defer f.Close()
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
		return nil, fmt.Errorf("--hosts %s: a file with %d hard links (one may lie in a server's read-write grant): name a file of its own", file, st.Nlink)
	}
	paths := []string{file}
	if abs, err := filepath.Abs(file); err == nil {
		paths = append(paths, abs)
	}
	if real, err := filepath.EvalSymlinks(file); err == nil {
		paths = append(paths, real)
	}
	if real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd()))); err == nil {
		paths = append(paths, real) // what was opened, whatever the path says now
	}
	for _, p := range paths {
		if g, in := launch.InsideAny(p, grants); in {
			return nil, fmt.Errorf("--hosts %s lies inside %s, which a server of the project may write: it could say where allowed names are; name a file outside every read-write grant", file, g)
		}
	}
	table, err := egress.ParseHosts(io.LimitReader(f, hostfile.MaxConfig))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	return table, nil
}
