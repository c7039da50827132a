// Package suggest turns the egress proxy's decision log into the smallest
// policy change that would allow what was denied: one exact host:port
// entry per denied destination (never a wildcard, never a private address
// the user did not name), added to the server's network.allow in the
// policy's own source text, as a unified diff. Nothing is applied unless
// asked: the patch goes through review (mcpolicy diff shows each entry as
// EGRESS_ADDED, widened) like any other change.
package suggest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/allowlist"
	"github.com/mcpolicy/mcpolicy/internal/printable"
	"github.com/mcpolicy/mcpolicy/runtime/egress"
)

// Options tune Read.
type Options struct {
	// Private are the private addresses the user named (--allow-private):
	// a denied request to one of them by address may be suggested. No
	// other private address ever is.
	Private []netip.Addr
	// Allowed is the server's list as it is now: a denial it allows
	// already (the log is older than the policy) is skipped.
	Allowed allowlist.List
}

// Entry is one suggested allowlist entry.
type Entry struct {
	Dest    string   // host:port, the host spelled as the allowlist compares it
	Host    string   // canonical
	Port    int      //
	Count   int      // denials it would have allowed
	Methods []string // CONNECT, GET, ... sorted
}

// Skip is a denied destination no entry is suggested for, and why.
type Skip struct {
	Dest   string // host:port, or the host as requested when it has no canonical spelling; "" for a refused connection
	Denied string // the rule it missed (egress.Denied*), from the line or its reason
	Count  int
	Why    string
}

// Result is what a log asks for.
type Result struct {
	Add     []Entry // sorted by host, then port
	Skipped []Skip  // sorted by destination
	Lines   int     // decision lines read
	Denials int     // of which denials
	Other   int     // lines that are not decisions (a server's stderr mixed in), ignored
	// Full counts the lines saying the log reached its limit
	// (egress.LogFull): decisions after one are missing, so the
	// suggestion may be short of what was denied.
	Full int
}

// Entries are the suggested entries' destinations, in order.
func (r *Result) Entries() []string {
	es := make([]string, len(r.Add))
	for i, e := range r.Add {
		es[i] = e.Dest
	}
	return es
}

// Read reads a decision log (JSON lines; other lines are counted and
// ignored: with mcpolicy run --log - the decisions share stderr with the
// server).
func Read(r io.Reader, opt Options) (*Result, error) {
	res := &Result{}
	add := map[string]*Entry{}
	skip := map[string]*Skip{}
	err := eachLine(r, func(line []byte) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			return
		}
		d, ok := decision(line)
		if !ok {
			// Without --log the server's stderr is the log too: what it
			// wrote without a newline runs into the proxy's next line,
			// which is whole at the end of it.
			i := bytes.LastIndex(line, []byte(`{"time":"`))
			if i <= 0 {
				res.Other++
				return
			}
			if d, ok = decision(line[i:]); !ok {
				res.Other++
				return
			}
			res.Other++ // what came before it
		}
		res.Lines++
		// Every string below may be the server's (what it asked for, or
		// a line it wrote itself) and is printed to a terminal.
		d.Method, d.Denied, d.Reason, d.Rule, d.Requested = printable.String(d.Method), printable.String(d.Denied), printable.String(d.Reason), printable.String(d.Rule), printable.String(d.Requested)
		if d.Action == egress.LogFull {
			res.Full++
		}
		if d.Action != "deny" {
			return
		}
		res.Denials++
		dest, denied, why := classify(d, opt)
		dest, denied, why = printable.String(dest), printable.String(denied), printable.String(why)
		if why != "" {
			key := denied + " " + dest
			if s := skip[key]; s != nil {
				s.Count++
			} else {
				skip[key] = &Skip{Dest: dest, Denied: denied, Count: 1, Why: why}
			}
			return
		}
		e := add[dest]
		if e == nil {
			host, port, _ := net.SplitHostPort(dest)
			n, _ := strconv.Atoi(port)
			e = &Entry{Dest: dest, Host: host, Port: n}
			add[dest] = e
		}
		e.Count++
		if d.Method != "" && !contains(e.Methods, d.Method) {
			e.Methods = append(e.Methods, d.Method)
			sort.Strings(e.Methods)
		}
	})
	if err != nil {
		return nil, err
	}
	for _, e := range add {
		res.Add = append(res.Add, *e)
	}
	sort.Slice(res.Add, func(i, j int) bool {
		a, b := res.Add[i], res.Add[j]
		if a.Host != b.Host {
			return a.Host < b.Host
		}
		return a.Port < b.Port
	})
	for _, s := range skip {
		res.Skipped = append(res.Skipped, *s)
	}
	sort.Slice(res.Skipped, func(i, j int) bool {
		a, b := res.Skipped[i], res.Skipped[j]
		if a.Dest != b.Dest {
			return a.Dest < b.Dest
		}
		return a.Denied < b.Denied
	})
	return res, nil
}

// decision reads one JSON line as a decision.
func decision(line []byte) (egress.Decision, bool) {
	var d egress.Decision
	if line[0] != '{' || json.Unmarshal(line, &d) != nil || d.Action == "" {
		return egress.Decision{}, false
	}
	return d, true
}

// maxLine bounds the part of a line Read keeps: a decision line is a few
// hundred bytes; a longer line is what a server wrote to a shared stderr.
const maxLine = 1 << 20

// eachLine calls f with each line of r (its newline kept); of a line
// longer than maxLine, with its last maxLine bytes (where a decision
// written after a server's unterminated output is): a long line hides
// nothing after it, and does not stop the reading.
func eachLine(r io.Reader, f func([]byte)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > 2*maxLine {
			buf = buf[:copy(buf, buf[len(buf)-maxLine:])]
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if len(buf) > maxLine {
			buf = buf[:copy(buf, buf[len(buf)-maxLine:])]
		}
		if len(buf) > 0 {
			f(buf)
		}
		buf = buf[:0]
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// classify returns the entry a denial asks for, or why none is suggested.
// It decides from the line's host, port and reason, not from its
// "suggest" field: a log from an older mcpolicy has none, and a line is
// data, not an instruction.
func classify(d egress.Decision, opt Options) (dest, denied, why string) {
	denied = d.Denied
	if d.Host == "" {
		switch {
		case strings.HasPrefix(d.Reason, "connection refused"):
			return "", orDefault(denied, egress.DeniedNotSandbox), "a connection from outside the sandbox, refused by the peer check: not an allowlist matter"
		default:
			return d.Requested, orDefault(denied, egress.DeniedBadHost), "not a host name the allowlist can hold: " + d.Reason
		}
	}
	host, err := allowlist.Canonical(d.Host)
	if err != nil || d.Port < 1 || d.Port > 65535 {
		return d.Host, orDefault(denied, egress.DeniedBadHost), "not a host:port the allowlist can hold"
	}
	dest = net.JoinHostPort(host, strconv.Itoa(d.Port))
	if r, err := allowlist.ParseRule(dest); err != nil || r.Wildcard {
		return dest, orDefault(denied, egress.DeniedBadHost), "not an exact host:port the allowlist can hold"
	}
	switch {
	case strings.HasPrefix(d.Reason, "upstream: "):
		return dest, orDefault(denied, egress.DeniedUpstream), "allowed already; the destination refused or timed out (" + strings.TrimPrefix(d.Reason, "upstream: ") + ")"
	case strings.Contains(d.Reason, "resolves to the private address"):
		return dest, orDefault(denied, egress.DeniedPrivate), d.Reason + ": no entry naming a host allows a private answer; only a request to the address itself, with an entry naming it, is allowed"
	case strings.HasPrefix(d.Reason, "cannot resolve"):
		return dest, orDefault(denied, egress.DeniedUnresolved), "allowed already by " + d.Rule + "; the name does not resolve"
	case d.Reason == "the proxy is stopping":
		return dest, orDefault(denied, egress.DeniedStopping), "the proxy was stopping"
	case d.Reason != "not in the allowlist":
		return dest, orDefault(denied, "unknown"), "not an allowlist denial: " + d.Reason
	}
	if denied == "" {
		denied = egress.DeniedNotListed
	}
	if r, ok := opt.Allowed.MatchCanonical(host, d.Port); ok {
		return dest, denied, fmt.Sprintf("allowed now by %s (the log is older than the policy)", r)
	}
	if a, err := netip.ParseAddr(host); err == nil && allowlist.Private(a) {
		for _, p := range opt.Private {
			if p.Unmap() == a.Unmap() {
				return dest, denied, ""
			}
		}
		return dest, denied, fmt.Sprintf("a private address: not suggested unless you name it (--allow-private %s)", a)
	}
	return dest, denied, ""
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
