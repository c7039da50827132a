package clientcfg

import (
	"slices"
	"testing"
)

// The two ways a command line is split into words: as the shell a wrapper
// starts reads it (sh -c, wsl, env -S; cmd /c, PowerShell -Command), and
// as a client splits a "command" string that holds its arguments.

func TestSplitShellCommand(t *testing.T) {
	for _, c := range []struct {
		in      string
		posix   bool
		words   []string
		assigns []string
	}{
		// sh: quotes, backslash escapes, lists of commands, assignments.
		{`docker run -i --rm "my img"`, true, []string{"docker", "run", "-i", "--rm", "my img"}, nil},
		{`cd /x && FOO=1 exec npx -y 'a b' 2>&1`, true, []string{"npx", "-y", "a b"}, []string{"FOO=1"}},
		{`source ~/.nvm/nvm.sh; npx x > /tmp/log`, true, []string{"npx", "x"}, nil},
		{`echo "a \"b\"" | node s.js`, true, []string{"node", "s.js"}, nil},
		{`a\ b c`, true, []string{"a b", "c"}, nil},
		{`"a\"b" 'c\d' "e\xf" "g\$h"`, true, []string{`a"b`, `c\d`, `e\xf`, "g$h"}, nil},
		{"npx -y\\\n  x", true, []string{"npx", "-y", "x"}, nil},
		{`npx x\`, true, []string{"npx", `x\`}, nil},
		{`npx 'a b`, true, []string{"npx", "a b"}, nil},
		{`npx "a b`, true, []string{"npx", "a b"}, nil},
		{`npx "" a""b`, true, []string{"npx", "", "ab"}, nil},
		{"npx x &", true, []string{"npx", "x"}, nil},
		{"true || npx x\n\n", true, []string{"npx", "x"}, nil},
		{"npx x\r\n", true, []string{"npx", "x"}, nil},
		{"npx\tx >/tmp/log 2>/dev/null < in >>out 2>&1 >&2", true, []string{"npx", "x"}, nil},
		{"exec FOO=1 BAR= npx x", true, []string{"npx", "x"}, []string{"FOO=1", "BAR="}},
		// exec replaces the shell: what follows it never runs.
		{"cd ~/x && exec npx -y srv; echo done", true, []string{"npx", "-y", "srv"}, nil},
		{"FOO=1 exec node s.js 2>/tmp/err\nrm -f /tmp/lock", true, []string{"node", "s.js"}, []string{"FOO=1"}},
		{"exec 2>/tmp/log; npx x", true, []string{"npx", "x"}, nil},
		{"exec", true, nil, nil},
		{"FOO=1", true, nil, []string{"FOO=1"}},
		{"=x npx", true, []string{"=x", "npx"}, nil},
		{"npx FOO=1", true, []string{"npx", "FOO=1"}, nil},
		{"", true, nil, nil},
		{" ; ", true, nil, nil},
		// cmd.exe, PowerShell: backslashes are path characters, no
		// assignments; call and exec are taken off.
		{`"C:\Program Files\nodejs\npx.cmd" -y pkg C:\Users\me`, false, []string{`C:\Program Files\nodejs\npx.cmd`, "-y", "pkg", `C:\Users\me`}, nil},
		{`& 'C:\tools\node.exe' server.js`, false, []string{`C:\tools\node.exe`, "server.js"}, nil},
		{`CALL npx.cmd -y x`, false, []string{"npx.cmd", "-y", "x"}, nil},
		{`exec npx`, false, []string{"npx"}, nil},
		{`set A=1&& FOO=1 npx x 2>nul`, false, []string{"FOO=1", "npx", "x"}, nil},
		{`"C:\dir\" x`, false, []string{`C:\dir\`, "x"}, nil},
		{`a\ b "c\"d"`, false, []string{`a\`, "b", `c\d`}, nil},
		{"npx x\r\n", false, []string{"npx", "x"}, nil},
	} {
		w, a := testShellSplit(c.in, c.posix)
		if !slices.Equal(w, c.words) || !slices.Equal(a, c.assigns) {
			t.Errorf("shell split (posix %v) of %q = %q, %q; want %q, %q", c.posix, c.in, w, a, c.words, c.assigns)
		}
	}
}

func TestSplitClientCommand(t *testing.T) {
	for _, c := range []struct {
		in    string
		words []string
	}{
		{"docker run -i --rm img", []string{"docker", "run", "-i", "--rm", "img"}},
		{"bash -c 'npx x'", []string{"bash", "-c", "npx x"}},
		{`"C:\Program Files\nodejs\npx.cmd" -y pkg C:\Users\me`, []string{`C:\Program Files\nodejs\npx.cmd`, "-y", "pkg", `C:\Users\me`}},
		// No shell: its operators are characters of a word, a backslash
		// escapes nothing, nothing is taken off.
		{`a\ b "c\"d"`, []string{`a\`, "b", `c\d`}},
		{"npx x; rm -rf ~ && y | z & 2>&1 >out", []string{"npx", "x;", "rm", "-rf", "~", "&&", "y", "|", "z", "&", "2>&1", ">out"}},
		{"exec FOO=1 call npx", []string{"exec", "FOO=1", "call", "npx"}},
		{"a\tb  c ", []string{"a", "b", "c"}},
		{"a\r\nb", []string{"a\r\nb"}},
		{`'it"s' "it's"`, []string{`it"s`, "it's"}},
		{`'' a'b c'd`, []string{"", "ab cd"}},
		{`npx "a b`, []string{"npx", "a b"}},
		{"", nil},
		{" \t ", nil},
	} {
		if w := testClientSplit(c.in); !slices.Equal(w, c.words) {
			t.Errorf("client split of %q = %q; want %q", c.in, w, c.words)
		}
	}
}

func testShellSplit(s string, posix bool) ([]string, []string) {
	if posix {
		return splitCommand(s, posixShell)
	}
	return splitCommand(s, windowsShell)
}

func testClientSplit(s string) []string {
	w, a := splitCommand(s, clientSplit)
	if a != nil {
		panic("a client's split has no assignments")
	}
	return w
}
