package clientcfg

import (
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/internal/lazyre"
	"github.com/mcpolicy/mcpolicy/internal/position"
	"github.com/mcpolicy/mcpolicy/internal/secretshape"
)

// The inline-secret heuristic is package secretshape's (the compiler reads
// a policy's setenv values with it too); these are its names here.
var (
	secretKind        = secretshape.Kind
	looksLikeSecret   = secretshape.Looks
	isReference       = secretshape.IsReference
	credential        = secretshape.Credential
	secretNamed       = secretshape.Named
	mentionsReference = secretshape.MentionsReference
	privateKey        = secretshape.PrivateKey
	secretName        = secretshape.SecretName
)

// argSecrets flags the secrets written in an entry's command line, each at
// the position of the argument that holds it (a secret in argv is in the
// config file and in every `ps`):
//   - a header "Name: value" (mcp-remote --header) as a header;
//   - the value of an option whose name says secret: --api-key X,
//     --api-key=X, --auth-token X, --password X (at the value);
//   - NAME=value (an env wrapper, another program's -e) as an env value;
//   - a credential by its shape (credential) in any other argument: a token
//     after a docker image or among npx/uvx arguments, a connection string
//     with a password, a URL with a secret query parameter.
//
// An argument holding blanks (sh -c "npx ... --token X", a command string)
// is read word by word, each word at the argument's position. What is
// already flagged at the same position (docker -e, bwrap --setenv) is not
// flagged twice.
func (e *entry) argSecrets(cmd arg, args []arg) {
	var words []arg
	for _, a := range append([]arg{cmd}, args...) {
		if strings.Contains(a.s, ":") {
			if m := header.FindStringSubmatch(a.s); m != nil && secretNamed(m[1]) {
				if secretKind(m[1], m[2]) != "" {
					e.secret(m[1], a.pos)
				}
				continue
			}
		}
		if strings.ContainsAny(a.s, " \t\n") && !privateKey.MatchString(a.s) {
			for _, w := range shellWords(a.s) {
				words = append(words, arg{w, a.pos})
			}
			continue
		}
		words = append(words, a)
	}
	for i, a := range words {
		opt, val, joined := strings.Cut(a.s, "=")
		switch {
		case strings.HasPrefix(a.s, "-") && secretNamed(strings.TrimLeft(opt, "-")):
			switch {
			case joined:
				if secretKind(opt, val) != "" {
					e.secret(opt, a.pos)
				}
			case i+1 < len(words) && !strings.HasPrefix(words[i+1].s, "-"):
				if secretKind(opt, words[i+1].s) != "" {
					e.secret(opt, words[i+1].pos)
				}
			}
			continue
		case joined && envName.MatchString(opt):
			if secretKind(opt, val) != "" {
				e.secret(opt, a.pos)
			}
			continue
		}
		if what := credential(a.s); what != "" {
			e.secret("an argument ("+what+")", a.pos)
		}
	}
}

// urlSecret flags a remote entry's URL that holds a credential.
func (e *entry) urlSecret(u arg) {
	if what := credential(u.s); what != "" {
		e.secret("the url ("+what+")", u.pos)
	}
}

// secret flags an inline secret named what at pos, once per position.
func (e *entry) secret(what string, pos position.Pos) {
	for _, f := range e.t.Flags {
		if f.Kind == readback.FlagSecretInline && f.Pos == pos {
			return
		}
	}
	e.flag(readback.FlagSecretInline, what, pos)
}

var (
	envName = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*$`)
	header  = lazyre.New(`^([A-Za-z][A-Za-z0-9\-]+):\s*(\S.*)$`)
)

// shellWords splits a command string into words, quotes removed (no
// expansion: only where each word starts matters, and every word is at the
// argument's position).
func shellWords(s string) []string {
	var words []string
	var b strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			b.WriteByte(c)
		case c == '"' || c == '\'':
			quote, in = c, true
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				words = append(words, b.String())
				b.Reset()
				in = false
			}
		default:
			b.WriteByte(c)
			in = true
		}
	}
	if in {
		words = append(words, b.String())
	}
	return words
}
