//go:build !linux

package prove

import (
	"fmt"
	"runtime"
)

// errNoFollow: prove runs bwrap, the Landlock launcher and docker/podman
// behind mcpolicy's mount checks, all of which need Linux; so does undoing
// what a probe changed on the host without following a symbolic link
// (openat2, renameat2). See session_linux.go.
func errNoFollow(path string) error {
	return fmt.Errorf("%s: reaching it without following symbolic links needs Linux (openat2, renameat2); this is %s: mcpolicy prove runs on Linux only", path, runtime.GOOS)
}

func openParent(path string) (int, string, error) { return -1, "", errNoFollow(path) }

func readNoFollow(path string) ([]byte, error) { return nil, errNoFollow(path) }

func moveBack(to, from string) error { return errNoFollow(to) }
