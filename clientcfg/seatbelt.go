package clientcfg

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/internal/hostfile"

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
					e.flag(readback.FlagUnknown, a.s+" (no value)", a.pos)
					continue
				}
				v = args[i]
				i++
			}
		default:
			e.flag(readback.FlagUnknown, a.s, a.pos)
			continue
		}
		switch opt {
		case "-f":
			file = &v
		case "-p":
			text = &v
		case "-n": // a built-in profile (no-network, no-internet...): not readable here
			e.flag(readback.FlagUnknown, "-n "+v.s, v.pos)
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
			e.flag(readback.FlagUnknown, "sandbox-exec -f "+file.s+e.notRead(), file.pos)
			return
		}
		if f == "" {
			e.flag(readback.FlagSeatbeltFinding, fmt.Sprintf("%s: cannot locate the profile (the path holds a variable this reader cannot resolve)", file.s), file.pos)
			return
		}
		b, err := hostfile.ReadRegular(f, hostfile.MaxArtefact)
		if err != nil {
			e.flag(readback.FlagSeatbeltFinding, fmt.Sprintf("%s: cannot read the profile: %v", file.s, err), file.pos)
			return
		}
		src = string(b)
	default:
		e.flag(readback.FlagSeatbeltFinding, "sandbox-exec without -f or -p: no profile this reader can check", cmd.pos)
		return
	}
	at := file
	if text != nil {
		at = text
	}
	forms, err := seatbelt.Parse(src)
	if err != nil {
		e.flag(readback.FlagSeatbeltFinding, fmt.Sprintf("%s:%v", name, err), at.pos)
		return
	}
	for _, f := range seatbelt.Check(forms, params) {
		if f.Severity == "error" {
			e.flag(readback.FlagSeatbeltFinding, fmt.Sprintf("%s:%d:%d: %s", name, f.Line, f.Col, f.Msg), at.pos)
		}
	}
}

// seatbeltWrapper reads the seatbelt wrapper an entry runs (sh, bash, zsh
// .mcpolicy/seatbelt/SERVER.sh, or the script itself) where the config is
// this machine's: the entry is mcpolicy's, its policy linted on its own,
// only if the wrapper starts the server through env -i with the granted
// variables alone (seatbelt.CheckWrapper). One built before that, or
// edited, hands the server the client's environment: a flag. A wrapper
// not built yet, or another machine's, is not judged.
func (e *entry) seatbeltWrapper(script arg) {
	if !strings.Contains("/"+slash(script.s), "/.mcpolicy/seatbelt/") {
		return
	}
	f := e.localFile(script.s)
	if f == "" {
		return
	}
	b, err := hostfile.ReadRegular(f, hostfile.MaxArtefact)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return
	case err != nil:
		e.flag(readback.FlagSeatbeltWrapper, fmt.Sprintf("%s: cannot read the wrapper (%v): whether it clears the environment is not known", script.s, err), script.pos)
	default:
		var werr *seatbelt.WrapperError
		switch err := seatbelt.CheckWrapper(b); {
		case errors.As(err, &werr) && werr.Line > 0:
			e.flag(readback.FlagSeatbeltWrapper, fmt.Sprintf("%s:%d: %s", script.s, werr.Line, werr.Msg), script.pos)
		case err != nil:
			e.flag(readback.FlagSeatbeltWrapper, fmt.Sprintf("%s: %v", script.s, err), script.pos)
		}
	}
}
