// Package hostcaps reads what this machine offers a sandbox: the Landlock
// ABI and whether unprivileged user namespaces work. The emitters ask it
// what a plan would get here; the launcher asks it before it starts one.
package hostcaps

import (
	"os"
	"strings"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// Host is what the machine offers; enforceability depends on it.
type Host struct {
	ABI    int  // Landlock ABI version; 0 when Landlock is absent
	UserNS bool // unprivileged user (and so network) namespaces work
}

// DetectHost reads what this machine offers. Whether user namespaces work
// is only known for sure by trying, which the launcher does; here it is what the
// kernel's settings say.
func Detect() Host {
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
