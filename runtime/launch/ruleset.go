package launch

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// This package imports nothing of mcpolicy's compiler: the small launcher
// (cmd/mcpolicy-launch) links it without CUE, whose package initialisation
// alone costs tens of milliseconds per process.

// MinABI is the oldest Landlock ABI mcpolicy runs on: ABI 3 adds the
// truncate right; below it, truncate(2) is not controlled at all.
const MinABI = 3

// ScopeABI is the ABI that scopes abstract unix sockets and signals.
const ScopeABI = 6

// Degradations a policy may accept for this backend (see the schema).
const (
	AcceptTCPOnly    = "landlock-tcp-only"
	AcceptNoScope    = "landlock-no-scope"
	AcceptScratchDir = "landlock-scratch-dir"
	// AcceptUnixSockets: without namespaces the host's named unix sockets
	// (/run/docker.sock, D-Bus, ssh-agent...) stay reachable; Landlock has
	// no right for connect(2) to a path.
	AcceptUnixSockets = "landlock-unix-sockets"
)

// Ruleset is what the launcher enforces for one server. Committed
// artefacts hold it with ${PROJECT_ROOT} and ${HOME} placeholders.
type Ruleset struct {
	Server    string   `json:"server"`
	Plan      string   `json:"plan"`
	Baseline  []string `json:"baseline"`  // read and execute; skipped where missing
	ReadOnly  []string `json:"readOnly"`  // read and execute, recursively
	ReadWrite []string `json:"readWrite"` // also create, write, remove, truncate
	DevicesRO []string `json:"devicesReadOnly"`
	DevicesRW []string `json:"devicesReadWrite"`
	// Scratch is a bounded tmpfs mounted over this host path in a private
	// mount namespace (or, with landlock-scratch-dir and no namespaces, a
	// private directory exported as TMPDIR).
	Scratch     string   `json:"scratch,omitempty"`
	ScratchSize int64    `json:"scratchSize,omitempty"`
	Network     string   `json:"network"` // "none"
	Env         []string `json:"env"`     // names passed through
	User        string   `json:"user"`
	Workdir     string   `json:"workdir,omitempty"`
	Command     []string `json:"command"`
	Accept      []string `json:"accept"`
	// ProgramPins: as BwrapSpec's.
	ProgramPins []string `json:"programPins,omitempty"`
}

// Accepts reports whether the policy accepted the named degradation.
func (rs *Ruleset) Accepts(name string) bool {
	for _, a := range rs.Accept {
		if a == name {
			return true
		}
	}
	return false
}

// JSON renders the ruleset for review, with a trailing newline.
func (rs *Ruleset) JSON() []byte {
	b, err := json.MarshalIndent(rs, "", "  ")
	if err != nil {
		panic("internal error: ruleset does not marshal: " + err.Error())
	}
	return append(b, '\n')
}

// Resolve replaces the ${PROJECT_ROOT} and ${HOME} placeholders a
// committed ruleset holds at the start of its paths. Both values must be
// absolute: an empty one would turn "${HOME}/x" into "/x".
func (rs *Ruleset) Resolve(projectRoot, home string) error {
	var bad error
	fix := func(p string) string {
		for ph, v := range map[string]string{"${PROJECT_ROOT}": projectRoot, "${HOME}": home} {
			if p == ph || strings.HasPrefix(p, ph+"/") {
				if !filepath.IsAbs(v) {
					bad = fmt.Errorf("%s in %s needs an absolute value, got %q", ph, p, v)
				}
				return v + strings.TrimPrefix(p, ph)
			}
		}
		return p
	}
	for _, list := range [][]string{rs.Baseline, rs.ReadOnly, rs.ReadWrite} {
		for i := range list {
			list[i] = fix(list[i])
		}
	}
	rs.Workdir = fix(rs.Workdir)
	u, err := invokerUser(rs.Server, rs.User)
	if err != nil {
		return err
	}
	rs.User = u
	for i, a := range rs.Command {
		if flag, v, ok := strings.Cut(a, "="); ok && i > 0 && strings.HasPrefix(v, "${") {
			rs.Command[i] = flag + "=" + fix(v)
		} else {
			rs.Command[i] = fix(a)
		}
	}
	return bad
}

// Host is what the machine offers; enforceability depends on it.
type Host struct {
	ABI    int  // Landlock ABI version; 0 when Landlock is absent
	UserNS bool // unprivileged user (and so network) namespaces work
}

// DetectHost reads what this machine offers. Whether user namespaces work
// is only known for sure by trying, which Start does; here it is what the
// kernel's settings say.
func DetectHost() Host {
	abi, err := ll.LandlockGetABIVersion()
	if err != nil {
		abi = 0
	}
	return Host{ABI: abi, UserNS: userNSAllowed()}
}

func userNSAllowed() bool {
	for _, f := range []string{"/proc/sys/kernel/unprivileged_userns_clone", "/proc/sys/user/max_user_namespaces"} {
		b, err := os.ReadFile(f)
		if err == nil && strings.TrimSpace(string(b)) == "0" {
			return false
		}
	}
	b, err := os.ReadFile("/proc/sys/kernel/apparmor_restrict_unprivileged_userns")
	if err == nil && strings.TrimSpace(string(b)) == "1" && os.Getuid() != 0 {
		return false
	}
	return true
}

// CheckSources opens every granted path below its base without following
// a symlink (see Sources): a grant swapped for a link since the ruleset was
// reviewed is refused. Landlock then opens the same paths itself; rules
// cannot nest on this backend, so no server can write beside a source.
func (rs *Ruleset) CheckSources(root, home string) error {
	src := NewSources(root, home)
	for _, list := range [][]string{rs.ReadOnly, rs.ReadWrite} {
		for _, p := range list {
			fd, err := src.Open(p)
			if err != nil {
				return err
			}
			closeFD(fd)
		}
	}
	return nil
}
