package prove

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/evidence/mcpcall"
	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/runtime/probe"
)

// ToolCall is the controlled comparison's other program: the server itself,
// in the same confinement, asked over MCP to do what the probe did.
type ToolCall struct {
	Tool string
	// Args are the call's arguments. A string value that is an absolute
	// path — a sandbox path below a mount target, or a host path — is a
	// path argument: prove probes it the way the tool uses it, and gives
	// each backend the path it shows (the host path under Landlock, the
	// sandbox path under bwrap and the engines).
	Args map[string]any
}

// CallArg is one path argument of the call, classified.
type CallArg struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Use    string `json:"use"` // UseRead or UseWrite
	Why    string `json:"why"`
	Host   string `json:"host"`   // the path on the host (Landlock's view)
	Target string `json:"target"` // the path in the sandbox (bwrap's, the engines')
	Expect string `json:"expect"` // what the plan says of the use: "allowed", "denied" or "" (shown only)
	Reason string `json:"reason"`
	// WriteExpect is what the plan says of writing the path, whatever the
	// use: a change the host sees where it is "denied" is a disagreement.
	WriteExpect string `json:"writeExpect"`
}

// CallPlan is how prove reads the call before making it.
type CallPlan struct {
	Tool ToolInfo `json:"tool"`
	// Listed says where the tool's description came from: tools/list from
	// the server confined under a backend, or why it could not be had.
	Listed string    `json:"listed"`
	Args   []CallArg `json:"args"`
	Expect string    `json:"expect"` // the call as a whole: "denied" when any path's use is
}

// ServerRow is what the real server answered, in the same confinement.
type ServerRow struct {
	Tool    string         `json:"tool"`
	Args    map[string]any `json:"args"` // as this backend's server was given them
	Expect  string         `json:"expect"`
	IsError bool           `json:"isError"`
	Text    string         `json:"text"`
	// Errno is "ok", the errno the server's error names (ENOENT,
	// EACCES...), or "" when it refused without one: its own check.
	Errno string `json:"errno"`
	// Refused is the server's own refusal, short, when it names no errno.
	Refused string `json:"refused,omitempty"`
	Probe   string `json:"probe"` // what the probe got for the same paths ("ok" or its first refusal)
	// Same: the probe and the server had the same outcome (both allowed,
	// or both refused — by the kernel, or the server by its own check).
	Same   bool   `json:"same"`
	Agrees bool   `json:"agrees"` // with the plan
	Note   string `json:"note,omitempty"`
	// Host is what the host saw change at the call's paths; Restored and
	// NotRestored what prove put back afterwards.
	Host        []string `json:"host,omitempty"`
	Restored    []string `json:"restored,omitempty"`
	NotRestored []string `json:"notRestored,omitempty"`
	Stderr      string   `json:"stderr"` // the server's last lines on stderr (e.g. a canary's startup read)
	Skipped     string   `json:"skipped,omitempty"`
}

// errnoOf reads an errno out of an error text, as strerror words it.
func errnoOf(text string) string {
	t := strings.ToLower(text)
	for _, e := range []struct{ words, name string }{
		{"no such file or directory", "ENOENT"}, {"permission denied", "EACCES"}, {"operation not permitted", "EPERM"},
		{"read-only file system", "EROFS"}, {"connection refused", "ECONNREFUSED"}, {"not a directory", "ENOTDIR"},
		{"is a directory", "EISDIR"}, {"file exists", "EEXIST"}, {"directory not empty", "ENOTEMPTY"},
		{"invalid cross-device link", "EXDEV"}, {"device or resource busy", "EBUSY"},
	} {
		if strings.Contains(t, e.words) {
			return e.name
		}
	}
	return ""
}

// short is the first line of a server's text, at most 120 characters.
func short(text string) string {
	s := strings.TrimSpace(strings.SplitN(strings.TrimSpace(text), "\n", 2)[0])
	if r := []rune(s); len(r) > 120 {
		s = string(r[:119]) + "…"
	}
	if s == "" {
		s = "an error without a message"
	}
	return s
}

// serverArgv is the server's launch under a backend, exactly as the
// artefact says; env is its whole environment.
func serverArgv(s *session, backend string, p *compiler.Plan, m compiler.Machine, o Options) (argv, env []string, err error) {
	switch rt := runtimeOf(backend); rt.Sandbox {
	case artefact.Bwrap:
		// Through mcpolicy run, which starts bwrap as the launcher does
		// (sources by descriptor, the plan's variables through --args, as
		// the plan's user when root runs it): the generated wrapper refuses
		// root, which bwrap would make the server.
		return append([]string{o.Self}, artefact.RunPolicyArgs(o.Policy, p.Server, backend)...), append(os.Environ(), "PROJECT_ROOT="+m.ProjectRoot), nil
	case artefact.Landlock:
		return []string{o.Self, "exec", "--policy", o.Policy, "--server", p.Server}, os.Environ(), nil
	case artefact.Engine:
		if exec.Command(rt.Program, "image", "inspect", p.Image).Run() != nil {
			return nil, nil, fmt.Errorf("the server's image %q is not on this machine", p.Image)
		}
		// Through mcpolicy run, as the launcher runs the engine: the
		// sources checked, the top level fixed, the mounts verified inside,
		// mcpolicy's seccomp profile (the bare arguments had none of these).
		return append([]string{o.Self}, artefact.RunPolicyArgs(o.Policy, p.Server, backend)...), append(os.Environ(), "PROJECT_ROOT="+m.ProjectRoot), nil
	}
	return nil, nil, fmt.Errorf("unknown backend %q", backend)
}

// findTool starts the server confined under backend and reads tools/list
// until it names the tool (nil when it does not). What the server sends is
// bounded: mcpcall reads no further than the tool, and no more than
// mcpcall.MaxTools, and keeps only the end of its stderr.
func findTool(ctx context.Context, s *session, backend string, p *compiler.Plan, m compiler.Machine, o Options) (*ToolInfo, error) {
	argv, env, err := serverArgv(s, backend, p, m, o)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	t, _, err := mcpcall.FindTool(cctx, argv, env, o.Call.Tool)
	if err != nil || t == nil {
		return nil, err
	}
	ro, destructive := false, false
	if a := t.Annotations; a != nil {
		ro = a.ReadOnlyHint
		destructive = a.DestructiveHint != nil && *a.DestructiveHint
	}
	ti := toolInfo(t.Name, t.Description, t.InputSchema, ro, destructive)
	return &ti, nil
}

// planCall classifies the call's path arguments: tools/list from the
// server confined under the first backend that starts it, then each
// path's use, its two views and what the plan says of it.
func planCall(ctx context.Context, s *session, v planView, o Options, backends []string) *CallPlan {
	cp := &CallPlan{Tool: ToolInfo{Name: o.Call.Tool}}
	var why []string
	for _, b := range backends {
		if ctx.Err() != nil {
			break
		}
		t, err := findTool(ctx, s, b, v.p, v.m, o)
		if err != nil {
			why = append(why, b+": "+short(err.Error()))
			continue
		}
		if t != nil {
			cp.Tool = *t
			cp.Listed = "tools/list from the server, confined under " + b
		} else {
			cp.Listed = fmt.Sprintf("tools/list from the server, confined under %s, has no tool %q", b, o.Call.Tool)
		}
		why = nil
		break
	}
	if cp.Listed == "" {
		cp.Listed = "no tools/list (" + strings.Join(why, "; ") + "): classified by the tool's name"
	}
	listed := cp.Listed
	cp = planCallWith(v, o, cp.Tool)
	cp.Listed = listed
	return cp
}

// planCallWith classifies the call's path arguments with what is known of
// the tool.
func planCallWith(v planView, o Options, tool ToolInfo) *CallPlan {
	cp := &CallPlan{Tool: tool}
	keys := make([]string, 0, len(o.Call.Args))
	for k := range o.Call.Args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	cp.Expect = "allowed"
	shown := false
	for _, k := range keys {
		val, ok := o.Call.Args[k].(string)
		if !ok || !filepath.IsAbs(val) {
			continue
		}
		pc := v.locate(val)
		a := CallArg{Key: k, Value: val, Host: pc.host, Target: pc.target}
		a.Use, a.Why = Classify(cp.Tool, k)
		a.WriteExpect, _ = v.writeExpect(pc)
		if a.Use == UseWrite {
			a.Expect, a.Reason = v.writeExpect(pc)
		} else {
			op := probe.Read
			if fi, err := os.Stat(pc.host); err == nil && fi.IsDir() {
				op = probe.List
			}
			a.Expect, a.Reason = v.readExpect(pc, op)
		}
		switch a.Expect {
		case "denied":
			cp.Expect = "denied"
		case "":
			shown = true
		}
		cp.Args = append(cp.Args, a)
	}
	if len(cp.Args) == 0 || shown && cp.Expect != "denied" {
		cp.Expect = ""
	}
	return cp
}

// viewArgs are the call's arguments as backend's server sees paths.
func viewArgs(o Options, cp *CallPlan, backend string) map[string]any {
	args := map[string]any{}
	for k, v := range o.Call.Args {
		args[k] = v
	}
	for _, a := range cp.Args {
		if provers[kind(backend)].hostView {
			args[a.Key] = a.Host
		} else {
			args[a.Key] = a.Target
		}
	}
	return args
}

// callServer starts the real server confined and puts the tool call to it,
// watching the host at the call's paths, and puts back what it changed.
func callServer(ctx context.Context, s *session, backend string, v planView, o Options, cp *CallPlan, probeResult string) *ServerRow {
	row := &ServerRow{Tool: o.Call.Tool, Args: viewArgs(o, cp, backend), Expect: cp.Expect, Probe: probeResult, Agrees: true}
	var before []hostState
	watch := map[string]CallArg{}
	for _, a := range cp.Args {
		at := a.Host
		if m := firstMissing(a.Host); m != "" {
			at = m
		}
		if _, dup := watch[at]; !dup {
			watch[at] = a
			before = append(before, snapshot(at))
		}
	}
	defer func() {
		row.Restored, row.NotRestored = restore(before)
	}()
	argv, env, err := serverArgv(s, backend, v.p, v.m, o)
	if err != nil {
		row.Skipped = clip(err.Error(), maxSkipped)
		return row
	}
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	res, err := mcpcall.Call(cctx, argv, env, o.Call.Tool, row.Args)
	row.Stderr = lastLines(res.Stderr, 5)
	// What the host saw, whatever the server says: a change where the
	// plan denies writing is a disagreement.
	denied := ""
	for _, b := range before {
		if c := change(b, snapshot(b.path)); c != "" {
			row.Host = append(row.Host, c)
			if watch[b.path].WriteExpect == "denied" && denied == "" {
				denied = c
			}
		}
	}
	if denied != "" {
		row.Agrees = false
		row.Note = "the host saw the server's write: " + denied + ", where the plan denies writing"
	}
	if err != nil {
		row.Skipped = clip(err.Error(), maxSkipped)
		return row
	}
	judge(row, cp, res.IsError, res.Text)
	return row
}

// judge sets the server's outcome beside the probe's, then against the
// plan. Two refusals agree, whoever refused: the kernel (an errno) or the
// server by its own check (no errno: its reason is kept, short). A
// success where the plan denies is a disagreement — unless the tool
// writes and the host saw nothing change (create_directory on a folder
// that exists); a change the host saw where the plan denies writing has
// already made the row disagree.
func judge(row *ServerRow, cp *CallPlan, isError bool, text string) {
	row.IsError, row.Text = isError, clip(text, maxText)
	row.Errno = errnoOf(text)
	if !isError {
		row.Errno = "ok"
	} else if row.Errno == "" {
		row.Refused = short(text)
	}
	serverOK, probeOK := row.Errno == "ok", row.Probe == "ok" || row.Probe == ""
	row.Same = serverOK == probeOK
	if !row.Agrees {
		return
	}
	writes := false
	for _, a := range cp.Args {
		writes = writes || a.Use == UseWrite
	}
	switch {
	case cp.Expect == "":
	case cp.Expect == "denied" && serverOK && writes && len(row.Host) == 0:
		row.Note = "the server reported success, but the host shows no change at the call's paths"
	case cp.Expect == "denied" && serverOK:
		row.Agrees = false
		row.Note = "the server did what the plan denies"
	case cp.Expect == "allowed" && !serverOK && row.Errno == "":
		row.Note = "the server refused by its own check, not the kernel: the plan allows it"
	case cp.Expect == "allowed" && !serverOK && row.Probe == "ok":
		// The server's words are not the kernel's: a hostile one names an
		// errno to have the plan blamed (a red team).
		row.Note = "the server reports " + row.Errno + ", but the probe was allowed the same access in the same confinement: the server's claim, not the kernel's"
	case cp.Expect == "allowed" && !serverOK:
		row.Agrees = false
		row.Note = "the kernel refused (" + row.Errno + ") what the plan allows"
	}
}

// What of a server's output the evidence quotes: the server chooses its
// length, and the evidence is read in review.
const (
	maxText = 4 << 10 // a tool result's text
	maxLine = 512     // a line of its stderr
)

// lastLines is the last n lines of s, each clipped to maxLine.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, l := range lines {
		lines[i] = clip(l, maxLine)
	}
	return strings.Join(lines, "\n")
}

// clip cuts s to at most n bytes, at a character, saying how much is cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes more)", s[:cut], len(s)-cut)
}
