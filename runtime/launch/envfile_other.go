//go:build !linux

package launch

// Load: the env file is opened with openat2's RESOLVE_NO_SYMLINKS (see
// envfile_linux.go), which only Linux has; elsewhere it is refused rather
// than read through a link. The seatbelt backend's entries read no env file.
func (f EnvFile) Load(names []string) (map[string]string, error) {
	return nil, needsLinux("reading the env file "+f.Path+" without following symlinks", "openat2")
}
