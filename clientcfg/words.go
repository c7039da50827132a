package clientcfg

import (
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/lazyre"
)

// syntax is the language a command line written as one string is read in.
// Two languages share the word rules (blanks separate words, quotes group,
// an unclosed quote runs to the end): a client's own split of a "command"
// string, which runs no shell, and the command language of the shell a
// wrapper starts, in its POSIX or Windows form.
type syntax int

const (
	// clientSplit is a client splitting a "command" string that holds its
	// arguments ("docker run -i --rm img"): single and double quotes group,
	// nothing else is special. No shell runs, so ; | & > are characters
	// of a word, and a backslash is one (C:\Program Files\... is not
	// escaped).
	clientSplit syntax = iota
	// posixShell is sh -c, wsl, env -S: a backslash escapes the next
	// character (in double quotes, only \ " $ ` and a newline), and
	// NAME=value words before the program are assignments.
	posixShell
	// windowsShell is cmd /c and PowerShell -Command: a backslash is a
	// plain character (Windows paths), and a leading call is taken off.
	windowsShell
)

// shell reports whether x is a shell's language: lists of commands,
// redirections, a leading exec.
func (x syntax) shell() bool { return x != clientSplit }

// splitCommand reads s in syntax x far enough to find the program it runs
// and that program's arguments. In a shell's language, of a list of
// commands (;, &&, ||, |, & or a newline between them) the server is the
// first that starts with exec (the shell is replaced by it: nothing after
// it runs, `exec npx ... ; echo done`), else the last one: `cd x && npx
// ...`, `source ~/.nvm/nvm.sh; npx ...`; redirections are dropped, a
// leading exec (and call, Windows) is taken off, and so are POSIX
// NAME=value assignments before the program, returned apart. A client's
// split is every word, as written.
func splitCommand(s string, x syntax) (words, assigns []string) {
	cmds := x.commands(s)
	for i := len(cmds) - 1; i >= 0; i-- {
		if len(cmds[i]) > 0 {
			words = cmds[i]
			break
		}
	}
	if x == posixShell {
		for _, c := range cmds {
			if execs(dropRedirections(c)) {
				words = c
				break
			}
		}
	}
	if !x.shell() {
		return words, nil
	}
	words = dropRedirections(words)
	for len(words) > 0 {
		switch {
		case words[0] == "exec" || x == windowsShell && strings.EqualFold(words[0], "call"):
			words = words[1:]
			continue
		case x == posixShell && assignment.MatchString(words[0]):
			assigns = append(assigns, words[0])
			words = words[1:]
			continue
		}
		break
	}
	return words, assigns
}

// execs reports whether a POSIX command is exec with a program (after
// NAME=value assignments): `exec >log 2>&1` alone only redirects the
// shell's own output, and the commands after it run.
func execs(words []string) bool {
	for len(words) > 0 && assignment.MatchString(words[0]) {
		words = words[1:]
	}
	return len(words) > 1 && words[0] == "exec"
}

// commands splits s into words, and (a shell) the words into the commands
// of a list. A client's split is one command.
func (x syntax) commands(s string) [][]string {
	var l wordList
	escapes := x == posixShell
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			i = l.quoted(s, i, false)
		case c == '"':
			i = l.quoted(s, i, escapes)
		case c == '\\' && escapes && i+1 < len(s):
			l.inWord = true
			i++
			if s[i] != '\n' { // a backslash-newline continues the line
				l.w.WriteByte(s[i])
			}
		case c == ' ' || c == '\t', c == '\r' && x.shell(): // a shell's script may end its lines in CRLF
			l.endWord()
		case !x.shell():
			l.add(c)
		case c == ';' || c == '\n' || c == '|':
			l.endCommand()
		case c == '&' && !l.redirecting():
			l.endCommand()
		default:
			l.add(c)
		}
	}
	l.endCommand()
	return l.cmds
}

// wordList gathers the words of a command line, command by command.
type wordList struct {
	cmds   [][]string
	cur    []string
	w      strings.Builder
	inWord bool // a word is open, even an empty one ("")
}

func (l *wordList) add(c byte) {
	l.inWord = true
	l.w.WriteByte(c)
}

func (l *wordList) endWord() {
	if l.inWord {
		l.cur = append(l.cur, l.w.String())
		l.w.Reset()
		l.inWord = false
	}
}

func (l *wordList) endCommand() {
	l.endWord()
	l.cmds = append(l.cmds, l.cur)
	l.cur = nil
}

// redirecting reports whether the open word ends in > or <: its & is part
// of a redirection (2>&1, >&2), not a separator.
func (l *wordList) redirecting() bool {
	prev := l.w.String()
	return l.inWord && (strings.HasSuffix(prev, ">") || strings.HasSuffix(prev, "<"))
}

// quoted adds the text quoted from s[i] (a quote) to the open word and
// returns the offset of the closing quote, or len(s) when there is none.
// With escapes (POSIX double quotes) a backslash before \ " $ ` or a
// newline stands for that character.
func (l *wordList) quoted(s string, i int, escapes bool) int {
	l.inWord = true
	q := s[i]
	for i++; i < len(s) && s[i] != q; i++ {
		if escapes && s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`\n", s[i+1]) >= 0 {
			i++
		}
		l.w.WriteByte(s[i])
	}
	return i
}

var (
	assignment  = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*=`)
	redirection = lazyre.New(`^[0-9]*(<|>|>>|<<|>&|<&|&>)`)
)

// dropRedirections takes redirections (>out, 2>&1, < in, 2> err) off words.
func dropRedirections(words []string) []string {
	var out []string
	for i := 0; i < len(words); i++ {
		m := redirection.FindString(words[i])
		if m == "" {
			out = append(out, words[i])
			continue
		}
		if words[i] == m && !strings.HasSuffix(m, "&") { // "> file": the file is the next word
			i++
		}
	}
	return out
}
