package writereport

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

const noFollow = syscall.O_NOFOLLOW

// self is this process's start time (clock ticks since boot) and the
// boot's ID: with the PID they name the process across PID reuse.
func self() (uint64, string) { return procStart(os.Getpid()), bootID() }

func bootID() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b))
}

func procStart(pid int) uint64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name may hold spaces and parentheses: fields follow
	// the last ')'.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 20 {
		return 0
	}
	n, _ := strconv.ParseUint(f[19], 10, 64)
	return n
}

// alive reports whether s's launcher process (or what it exec'd) still
// runs; unknown counts as alive: its window stays open.
func alive(s *Session) bool {
	if s.ProcStart == 0 || s.BootID == "" {
		return true
	}
	if bootID() != s.BootID {
		return false
	}
	return procStart(s.PID) == s.ProcStart
}
