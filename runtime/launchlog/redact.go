package launchlog

import "strings"

// MinSecret is the shortest value Redact looks for: shorter ones (a
// port, "true") would withhold lines for nothing, and say little.
const MinSecret = 6

// Withheld replaces a line that held a granted variable's value.
const Withheld = "[line withheld: it holds the value of a variable the server is granted]"

// Secrets are the values, in environ, of the names granted: the values
// no log may hold (those of MinSecret bytes or more).
func Secrets(environ, names []string) []string {
	var out []string
	for _, n := range names {
		for _, kv := range environ {
			if v, ok := strings.CutPrefix(kv, n+"="); ok && len(v) >= MinSecret {
				out = append(out, v)
			}
		}
	}
	return out
}

// Redact is text with every line that holds one of secrets replaced by
// Withheld: a whole line goes, not the value alone, so that no part of
// a value (a prefix the server printed, say) is kept.
func Redact(text string, secrets []string) string {
	if len(secrets) == 0 {
		return text
	}
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		for _, s := range secrets {
			if strings.Contains(l, s) {
				lines[i] = Withheld
				break
			}
		}
	}
	return strings.Join(lines, "\n")
}

// RedactLines is Redact for lines.
func RedactLines(lines, secrets []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = Redact(l, secrets)
	}
	return out
}
