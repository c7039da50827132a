package seatbelt

import (
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler"
)

// TestCheckWrapper: every wrapper Wrapper writes passes; one built before
// the server was started through env -i (its environment cleared in the
// shell, from export -p) fails, and so does each edit that would let a
// variable of the caller's through.
func TestCheckWrapper(t *testing.T) {
	grants := plan(compiler.HostPath{Base: compiler.ProjectRoot, Rel: "data"})
	grants.Network = compiler.Network{Mode: "allowlist", ProxyPort: 24567}
	bare := plan(compiler.HostPath{Base: compiler.Home, Rel: ".cache/x"})
	bare.Env, bare.Scratch, bare.Accept = nil, nil, nil
	bare.Command = []string{"python3", "-m", "server"}
	var sh string // the last: grants
	for _, p := range []*compiler.Plan{bare, grants} {
		pr, err := Build(p)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Wrapper(p, pr, "../..")
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckWrapper(b); err != nil {
			t.Errorf("a wrapper Wrapper wrote fails: %v\n%s", err, b)
		}
		sh = string(b)
	}

	old := strings.Replace(sh[:strings.Index(sh, "exec "+Env)], "set -- \\\n  ${TOKEN+\"TOKEN=$TOKEN\"}\n", "", 1) +
		`for name in $(export -p | sed -n 's/^export \([A-Za-z_][A-Za-z0-9_]*\)=.*/\1/p'); do
  case "$name" in PATH|HOME|TOKEN) ;; *) unset "$name" ;; esac
done
export PATH=/usr/bin:/bin HOME="/var/empty"
exec /usr/bin/sandbox-exec -f "$here/s.sb" \
    -- /usr/local/bin/server stdio
`
	for name, c := range map[string]struct{ script, want string }{
		"built before env -i":     {old, "starts /usr/bin/sandbox-exec directly, not through /usr/bin/env -i"},
		"env without -i":          {strings.Replace(sh, Env+" -i ", Env+" ", 1), "env without -i"},
		"a variable by value":     {strings.Replace(sh, `-i ${1+"$@"}`, `-i ${1+"$@"} "$LEAK"`, 1), `passes "$LEAK" to env`},
		"its values by command":   {strings.Replace(sh, `-i ${1+"$@"}`, `-i $(cat vars)`, 1), `passes $(cat vars) to env`},
		"no capture":              {strings.Replace(sh, "set -- \\\n  ${TOKEN+\"TOKEN=$TOKEN\"}\n", "", 1), "set 0 times"},
		"the caller's arguments":  {strings.Replace(sh, "set -- \\\n", "set -- \"$@\" \\\n", 1), `"$@" is not a granted variable`},
		"another name's value":    {strings.Replace(sh, `${TOKEN+"TOKEN=$TOKEN"}`, `${TOKEN+"TOKEN=$AWS_SECRET_ACCESS_KEY"}`, 1), "is not a granted variable"},
		"set twice":               {strings.Replace(sh, "here=", "set -- \"$0\"\nhere=", 1), "set 2 times"},
		"shifted":                 {strings.Replace(sh, "here=", "shift\nhere=", 1), "set 2 times"},
		"captured in a branch":    {strings.Replace(strings.Replace(sh, "set -- \\\n", "if true; then set -- \\\n", 1), `"TOKEN=$TOKEN"}`, `"TOKEN=$TOKEN"}; fi`, 1), "not set by one `set -- ...` at the top"},
		"started before":          {strings.Replace(sh, "set -eu\n", "set -eu\n/usr/bin/env -i \"$@\" /usr/bin/sandbox-exec -f x -- y\n", 1), "started before the variables it gets are kept"},
		"eval":                    {strings.Replace(sh, "here=", "eval \"$X\"\nhere=", 1), "runs code through eval"},
		"a command in a variable": {strings.Replace(sh, "here=", "$SB -f x -- y\nhere=", 1), "whose name is not written out ($SB)"},
		"through command":         {strings.Replace(sh, "here=", "command /usr/bin/sandbox-exec -f x -- y\nhere=", 1), "starts /usr/bin/sandbox-exec directly"},
		"no sandbox-exec":         {strings.Replace(sh, SandboxExec, "/usr/bin/true", 1), "does not start sandbox-exec"},
		"not shell":               {sh + "\nfi\n", "not a POSIX shell script"},
	} {
		err := CheckWrapper([]byte(c.script))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}
