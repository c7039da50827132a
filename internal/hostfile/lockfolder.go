package hostfile

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// LockFolder takes an exclusive flock on dir, the nearest of its folders
// that exists. The folder, not the file: the rename replaces the file's
// inode, and a lock on the old one would not exclude a run that opened the
// new one; a lock file beside it would land in the user's folder. The
// lock goes with the process: a killed run leaves none behind.
func LockFolder(dir string) (func(), error) {
	for tries := 0; ; tries++ {
		d := dir
		for {
			if fi, err := os.Stat(d); err == nil && fi.IsDir() {
				break
			}
			p := filepath.Dir(d)
			if p == d {
				break
			}
			d = p
		}
		fd, err := unix.Open(d, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("%s: locking it: %w", d, err)
		}
		if err := unix.Flock(fd, unix.LOCK_EX); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("%s: locking it: %w", d, err)
		}
		// The file's folder appeared while this run waited (another
		// created it): lock that one, as the run that created it did.
		if fi, err := os.Stat(dir); d != dir && err == nil && fi.IsDir() && tries < 3 {
			unix.Close(fd)
			continue
		}
		return func() { unix.Close(fd) }, nil
	}
}
