package supervise

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// withParentDeath adds Pdeathsig to what cmd's attributes say already.
func withParentDeath(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}

func terminal(fd uintptr) bool {
	_, err := unix.IoctlGetTermios(int(fd), unix.TCGETS)
	return err == nil
}

// signalSandboxed passes sig to what bwrap runs in its sandbox: the
// first process of the sandbox's PID namespace after bwrap's own init
// (pid 2 there) — the server, or the egress forwarder that starts it and
// passes signals on. bwrap itself must not get it: it would die of it,
// and its init, with --die-with-parent, would take the sandbox down with
// SIGKILL, so the server's handlers would never run. Until that process
// exists (bwrap still building the sandbox) it waits; if none appears, or
// /proc cannot tell, bwrap gets the signal after all: the sandbox ends, if
// not the server's way. Nothing is sent once bwrap is reaped.
func signalSandboxed(bwrap *os.Process, sig syscall.Signal, exited <-chan struct{}) {
	deadline := time.Now().Add(signalWait)
	for {
		pid, fd, err := sandboxFirst(bwrap.Pid)
		if err == nil {
			// ESRCH: it just ended, and the sandbox ends with it.
			if fd >= 0 {
				unix.PidfdSendSignal(fd, sig, nil, 0)
				unix.Close(fd)
			} else {
				syscall.Kill(pid, sig)
			}
			return
		}
		if !errors.Is(err, errNotYet) || time.Now().After(deadline) {
			bwrap.Signal(sig) // an error once it is reaped: nothing is sent then
			return
		}
		select {
		case <-exited:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// errNotYet: the sandbox's first process does not exist (yet).
var errNotYet = errors.New("the sandbox has no process yet")

// sandboxFirst finds the process bwrap (pid) runs in its sandbox: bwrap's
// one child is the PID namespace's init (pid 1 there), and the process
// wanted is the init's child that is pid 2 there. Without a PID namespace
// bwrap's child is that process. It returns the pid and a pidfd of it,
// taken before the last check, so it names the process checked (-1 where
// the kernel has no pidfd_open).
func sandboxFirst(bwrap int) (int, int, error) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		return 0, -1, fmt.Errorf("no /proc: %w", err)
	}
	inits, err := childrenOf(bwrap)
	if err != nil {
		return 0, -1, err
	}
	if len(inits) != 1 {
		return 0, -1, errNotYet
	}
	init := inits[0]
	st, err := procStatus(init)
	if err != nil {
		return 0, -1, errNotYet
	}
	want, parent := init, bwrap
	if ns := strings.Fields(st["NSpid"]); len(ns) > 1 && ns[len(ns)-1] == "1" {
		kids, err := childrenOf(init)
		if err != nil {
			return 0, -1, errNotYet
		}
		want, parent = 0, init
		for _, k := range kids {
			if ks, err := procStatus(k); err == nil && lastNSpid(ks) == "2" {
				want = k
			}
		}
		if want == 0 {
			return 0, -1, errNotYet
		}
	}
	fd, err := unix.PidfdOpen(want, 0)
	if errors.Is(err, unix.ENOSYS) {
		fd = -1
	} else if err != nil {
		return 0, -1, errNotYet
	}
	st, err = procStatus(want)
	if err != nil || st["PPid"] != strconv.Itoa(parent) || parent == init && lastNSpid(st) != "2" {
		if fd >= 0 {
			unix.Close(fd)
		}
		return 0, -1, errNotYet
	}
	return want, fd, nil
}

func lastNSpid(st map[string]string) string {
	ns := strings.Fields(st["NSpid"])
	if len(ns) == 0 {
		return ""
	}
	return ns[len(ns)-1]
}

// childrenOf lists a process's children: /proc/PID/task/*/children, or,
// in a kernel without that file, every process whose parent it is.
func childrenOf(pid int) ([]int, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return nil, errNotYet
	}
	var kids []int
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, t.Name()))
		if errors.Is(err, os.ErrNotExist) {
			return scanChildren(pid)
		}
		if err != nil {
			return nil, errNotYet
		}
		for _, f := range strings.Fields(string(b)) {
			if k, err := strconv.Atoi(f); err == nil {
				kids = append(kids, k)
			}
		}
	}
	return kids, nil
}

func scanChildren(pid int) ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var kids []int
	for _, e := range ents {
		k, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := procStatus(k); err == nil && st["PPid"] == strconv.Itoa(pid) {
			kids = append(kids, k)
		}
	}
	return kids, nil
}

// procStatus reads /proc/PID/status as name: value.
func procStatus(pid int) (map[string]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	st := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			st[k] = strings.TrimSpace(v)
		}
	}
	return st, nil
}

// listening reports whether a unix socket listens at path, from the
// kernel's table (/proc/net/unix: the flag __SO_ACCEPTCON), without
// connecting to it: a connection would be another run's to refuse and
// log as an intrusion. known is false when the table cannot be read.
func listening(path string) (live, known bool) {
	data, err := os.ReadFile("/proc/net/unix")
	if err != nil {
		return false, false
	}
	for _, line := range strings.Split(string(data), "\n")[1:] {
		// Num RefCount Protocol Flags Type St Inode Path: the path is the
		// rest of the line after seven fields, spaces and all.
		head, ok := strings.CutSuffix(line, " "+path)
		f := strings.Fields(head)
		if !ok || len(f) != 7 {
			continue
		}
		if flags, err := strconv.ParseUint(f[3], 16, 32); err == nil && flags&0x10000 != 0 {
			return true, true
		}
	}
	return false, true
}
