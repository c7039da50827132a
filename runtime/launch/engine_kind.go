package launch

import (
	"debug/buildinfo"
	"fmt"
	"os/exec"
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
)

// kind tells docker from podman: their options differ (the scratch's
// owner, --umask). The engine's binary says which it is in its Go build
// information, read without starting it (a CLI start costs 10-30 ms per
// launch): native is true then, and the launcher may read the engine's
// store as that CLI would. A binary that says neither — podman-docker's
// shell script, a wrapper — is asked (`ENGINE --version`), as before, and
// only ever run. The binary is as trusted as its answer: the launcher
// refuses an engine below a grant.
func (e Engine) kind() (podman, native bool, err error) {
	if podman, ok := builtKind(e.Path); ok {
		return podman, true, nil
	}
	out, err := exec.Command(e.Path, "--version").Output()
	if err != nil {
		return false, false, fmt.Errorf("%s --version: %v: the scratch's owner and the server's umask are set by engine-specific options", e.Path, err)
	}
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(string(out))), artefact.PodmanVersion), false, nil
}

// builtKind reads the main package of the Go binary engine names: ok is
// false unless it is podman's or docker's CLI.
func builtKind(engine string) (podman, ok bool) {
	p, err := exec.LookPath(engine)
	if err != nil {
		return false, false
	}
	bi, err := buildinfo.ReadFile(p)
	if err != nil {
		return false, false
	}
	return kindOfMain(bi.Path)
}

// kindOfMain maps a binary's main package to the engine: podman's
// (github.com/containers/podman[/vN]/cmd/podman) or docker's CLI.
func kindOfMain(main string) (podman, ok bool) {
	if rest, found := strings.CutPrefix(main, "github.com/containers/podman/"); found {
		return true, rest == "cmd/podman" || strings.HasSuffix(rest, "/cmd/podman") && !strings.Contains(strings.TrimSuffix(rest, "/cmd/podman"), "/")
	}
	return false, main == "github.com/docker/cli/cmd/docker"
}
