package launch

import (
	"os"
	"path/filepath"
)

// LauncherName is the small launcher's file name, installed beside
// mcpolicy (`go install ./cmd/...`).
const LauncherName = "mcpolicy-launch"

// LauncherBeside is the mcpolicy-launch beside exe (mcpolicy's own path)
// that `mcpolicy exec` may hand a launch to, or "": none there (go run, a
// test binary), not a regular file, or inside one of untrusted (the
// project's read-write grants, symlinks resolved), where a server could
// have put its own — and the launcher runs on the host, unconfined.
func LauncherBeside(exe string, untrusted []string) string {
	launcher := filepath.Join(filepath.Dir(exe), LauncherName)
	if fi, err := os.Stat(launcher); err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	grants := make(map[string]string, len(untrusted))
	for _, g := range untrusted {
		grants[g] = "of the project"
	}
	if ProgramsOutsideGrants([]Program{{What: "the launcher", Path: launcher}}, grants) != nil {
		return ""
	}
	return launcher
}
