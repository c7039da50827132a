package clientcfg

import (
	"fmt"
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/hostfile"

	"github.com/mcpolicy/mcpolicy/compiler/lint"
	"github.com/mcpolicy/mcpolicy/emit/seatbelt"
)

// sandboxExec reads `sandbox-exec [-f FILE | -p TEXT | -n NAME] [-D K=V]...
// [--] CMD...`: the profile is read (a relative FILE from the entry's cwd,
// else the project folder, else the config's folder), parsed and checked
// with the -D names the invocation defines. Each checker error is a flag;
// no plan is read back from SBPL.
func (e *entry) sandboxExec(cmd arg, args []arg) {
	params := map[string]bool{}
	var file, text *arg
	i := 0
	for i < len(args) {
		a := args[i]
		if a.s == "--" {
			i++
			break
		}
		if !strings.HasPrefix(a.s, "-") || len(a.s) < 2 {
			break
		}
		opt, v := a.s[:2], arg{a.s[2:], a.pos}
		i++
		switch opt {
		case "-f", "-p", "-n", "-D":
			if v.s == "" {
				if i >= len(args) {
					e.flag(lint.FlagUnknown, a.s+" (no value)", a.pos)
					continue
				}
				v = args[i]
				i++
			}
		default:
			e.flag(lint.FlagUnknown, a.s, a.pos)
			continue
		}
		switch opt {
		case "-f":
			file = &v
		case "-p":
			text = &v
		case "-n": // a built-in profile (no-network, no-internet...): not readable here
			e.flag(lint.FlagUnknown, "-n "+v.s, v.pos)
		case "-D":
			k, _, _ := strings.Cut(v.s, "=")
			params[k] = true
		}
	}
	e.dangerousArgs(args[i:], false) // what follows is the command, run under the profile

	var src, name string
	switch {
	case text != nil:
		src, name = text.s, "-p profile"
	case file != nil:
		name = file.s
		f := e.localFile(file.s)
		if f == "" && !e.local {
			// Another machine's profile: what it allows is not known here.
			e.flag(lint.FlagUnknown, "sandbox-exec -f "+file.s+e.notRead(), file.pos)
			return
		}
		if f == "" {
			e.flag(lint.FlagSeatbeltFinding, fmt.Sprintf("%s: cannot locate the profile (the path holds a variable this reader cannot resolve)", file.s), file.pos)
			return
		}
		b, err := hostfile.ReadRegular(f, hostfile.MaxArtefact)
		if err != nil {
			e.flag(lint.FlagSeatbeltFinding, fmt.Sprintf("%s: cannot read the profile: %v", file.s, err), file.pos)
			return
		}
		src = string(b)
	default:
		e.flag(lint.FlagSeatbeltFinding, "sandbox-exec without -f or -p: no profile this reader can check", cmd.pos)
		return
	}
	at := file
	if text != nil {
		at = text
	}
	forms, err := seatbelt.Parse(src)
	if err != nil {
		e.flag(lint.FlagSeatbeltFinding, fmt.Sprintf("%s:%v", name, err), at.pos)
		return
	}
	for _, f := range seatbelt.Check(forms, params) {
		if f.Severity == "error" {
			e.flag(lint.FlagSeatbeltFinding, fmt.Sprintf("%s:%d:%d: %s", name, f.Line, f.Col, f.Msg), at.pos)
		}
	}
}
