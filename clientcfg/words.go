package clientcfg

import (
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/lazyre"
)

// shellCommand reads a command line the way the shell a wrapper starts
// would, far enough to find the program it runs: words are split at
// blanks, quotes group (single quotes literally, double quotes with
// backslash escapes when posix), a backslash escapes the next character
// (posix) or is a plain character (cmd.exe, PowerShell: Windows paths). Of a list of
// commands (;, &&, ||, |, & or a newline between them) the last one is the
// server: `cd x && exec npx ...`, `source ~/.nvm/nvm.sh; npx ...`. A leading
// exec, and (posix) NAME=value assignments before the program, are taken
// off; the assignments are returned apart. Redirections are dropped.
func shellCommand(s string, posix bool) (words, assigns []string) {
	var cmds [][]string
	var cur []string
	var w strings.Builder
	inWord := false
	end := func() {
		if inWord {
			cur = append(cur, w.String())
			w.Reset()
			inWord = false
		}
	}
	sep := func() {
		end()
		cmds = append(cmds, cur)
		cur = nil
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			inWord = true
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				w.WriteString(s[i+1:])
				i = len(s)
				break
			}
			w.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			inWord = true
			for i++; i < len(s) && s[i] != '"'; i++ {
				if posix && s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`\n", s[i+1]) >= 0 {
					i++
				}
				w.WriteByte(s[i])
			}
		case c == '\\' && posix && i+1 < len(s):
			inWord = true
			i++
			if s[i] != '\n' {
				w.WriteByte(s[i])
			}
		case c == ' ' || c == '\t' || c == '\r':
			end()
		case c == ';' || c == '\n' || c == '|':
			sep()
		case c == '&':
			// 2>&1 and >& are redirections, not separators.
			if prev := w.String(); inWord && strings.HasSuffix(prev, ">") || inWord && strings.HasSuffix(prev, "<") {
				w.WriteByte(c)
				break
			}
			sep()
		default:
			inWord = true
			w.WriteByte(c)
		}
	}
	sep()
	for i := len(cmds) - 1; i >= 0; i-- {
		if len(cmds[i]) > 0 {
			words = cmds[i]
			break
		}
	}
	words = dropRedirections(words)
	for len(words) > 0 {
		switch {
		case words[0] == "exec" || !posix && strings.EqualFold(words[0], "call"):
			words = words[1:]
			continue
		case posix && assignment.MatchString(words[0]):
			assigns = append(assigns, words[0])
			words = words[1:]
			continue
		}
		break
	}
	return words, assigns
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

// splitCommandLine splits a "command" written as one string with its
// arguments ("docker run -i --rm img", "bash -c 'npx x'"): quotes group,
// backslashes stay (C:\Program Files\... is not escaped).
func splitCommandLine(s string) []string {
	var words []string
	var w strings.Builder
	inWord := false
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			w.WriteByte(c)
		case c == '"' || c == '\'':
			quote, inWord = c, true
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		default:
			inWord = true
			w.WriteByte(c)
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}
