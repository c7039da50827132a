package entry

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestRedteamExtendedAttributesKept: the new file gets the old one's mode
// and owner, but not its extended attributes: a POSIX ACL that lets
// another user or group read the file (system.posix_acl_access), a sync
// tool's or the user's own attribute (user.*), an SELinux label set by
// hand are all dropped by the rename.
func TestRedteamExtendedAttributesKept(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "claude.json")
	os.WriteFile(file, []byte(userConfig), 0o600)
	if err := syscall.Setxattr(file, "user.note", []byte("synced"), 0); err != nil {
		t.Skipf("no user xattrs here: %v", err)
	}
	if _, err := Save(SaveOptions{File: file, StateDir: filepath.Join(dir, "state"), Edit: addEntry(t, file, "claude-code", "alpha")}); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if n, err := syscall.Getxattr(file, "user.note", buf); err != nil || string(buf[:n]) != "synced" {
		t.Errorf("the file's extended attribute user.note is gone: %v", err)
	}
}
