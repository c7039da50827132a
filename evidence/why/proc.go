package why

import (
	"strconv"
	"strings"
)

// The server's /proc: every backend that has one mounts a procfs of the
// server's own PID namespace there (emit.ProcFS), never the host's. A path
// below /proc is so always a sandbox path: on this machine /proc/self is
// whoever asks (mcpolicy itself), in the sandbox it is the server.

const procRoot = "/proc"

// The Stop rules of /proc.
const (
	StopNoProc       = "no-proc"        // no /proc at all
	StopProcMasked   = "proc-masked"    // a masked path of the server's procfs
	StopProcHostWide = "proc-host-wide" // a host-wide file where only per-process folders are mounted
	StopProcHidden   = "proc-hidden"    // a process the server's /proc does not list
)

// inProc reports whether a sandbox path is in the server's /proc.
func inProc(p string) bool { return within(p, procRoot) }

// procNote is the answer's note for a path below /proc.
const procNote = "/proc is answered for the server's own /proc (a procfs of its PID namespace, where a backend has one), not this machine's: /proc/self is the server, never mcpolicy"

// proc answers for p, below /proc, from the backend's emit.ProcFS.
func (e *eval) proc(v *Verdict, p string) {
	fs := e.be.Proc(e.p)
	defer finish(v)
	if !fs.Own {
		s := Stop{Rule: StopNoProc, Detail: fs.How}
		if fs.OnRequest { // where proc: true would go
			s.Pos = e.m.pos(e.p.Pos)
		}
		v.Stops = append(v.Stops, s)
		return
	}
	first, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(p, procRoot), "/"), "/")
	for _, m := range fs.Masked {
		if within(p, m) {
			v.Stops = append(v.Stops, Stop{Rule: StopProcMasked, Detail: m + " shows the server nothing: " + fs.How})
			return
		}
	}
	if first == "1" && fs.HiddenInit != "" {
		v.Stops = append(v.Stops, Stop{Rule: StopProcHidden, Detail: fs.HiddenInit})
		return
	}
	_, numeric := strconv.Atoi(first)
	perProcess := first == "" || first == "self" || first == "thread-self" || numeric == nil
	if fs.PerProcess && !perProcess {
		v.Stops = append(v.Stops, Stop{Rule: StopProcHostWide, Detail: "/proc/" + first + " is not there: the server's /proc holds only per-process folders (subset=pid), no host-wide file"})
		return
	}
	v.Access = append(v.Access, Read)
	v.At = append(v.At, p+": "+procAt(p, first, numeric == nil, fs.Ptraceable))
	if fs.OnRequest {
		v.Via = append(v.Via, Grant{Kind: "proc", Summary: "proc: true, the server's own /proc", Pos: e.m.pos(e.p.ProcPos)})
	}
	v.At = append(v.At, fs.How)
}

// procAt says what p is in the server's procfs; first is its component
// below /proc.
func procAt(p, first string, pid, ptraceable bool) string {
	switch {
	case p == procRoot+"/self/exe":
		return "a link to the server's own program, as the server names it (/proc/self is the server)"
	case first == "self" || first == "thread-self":
		return "the server's own process"
	case pid && ptraceable:
		return "process " + first + " of the server's own PID namespace, there only when the server may ptrace it (its own processes); no host process is in it"
	case pid:
		return "process " + first + " of the server's own PID namespace, where it exists (its environ, fd, root and mem need ptrace access to it); no host process is in it"
	}
	return "the server's own procfs"
}
