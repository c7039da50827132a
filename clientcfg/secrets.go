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

// secretContext is what an entry's file says of the references in it:
// whether its client expands none in env values (literal), and which of
// its VS Code inputs are passwords.
type secretContext struct {
	literal bool
	inputs  map[string]bool
}

// secretInputs reads the ids of a VS Code file's password inputs
// ("password": true), in mcp.json's "inputs" or settings.json's
// "mcp": {"inputs"}.
func secretInputs(root *node) map[string]bool {
	var m map[string]bool
	mcp, _ := root.get("mcp")
	for _, parent := range []*node{root, mcp} {
		list, _ := parent.get("inputs")
		if list == nil || list.kind != kArray {
			continue
		}
		for _, in := range list.elems {
			id, _ := in.get("id")
			pw, _ := in.get("password")
			if id != nil && id.kind == kString && pw != nil && pw.kind == kOther && pw.str == "true" {
				if m == nil {
					m = map[string]bool{}
				}
				m[id.str] = true
			}
		}
	}
	return m
}

// valueSecret flags an env or headers value name=value written at pos: a
// secret inline, or a placeholder where the secret goes (in env, a
// reference too where the client expands none: the server gets the text).
func (e *entry) valueSecret(name, value string, pos position.Pos, env bool) {
	switch {
	case looksLikeSecret(name, value):
		e.secret(name, pos)
	case secretshape.Placeholder(name, value, env && e.secrets.literal):
		e.once(readback.FlagSecretPlaceholder, name, pos)
	}
}

// argSecrets flags the secrets written in an entry's command line, each at
// the position of the argument that holds it (a secret in argv is in the
// config file and in every `ps`):
//   - a header "Name: value" (mcp-remote --header) as a header;
//   - the value of an option whose name says secret: --api-key X,
//     --api-key=X, --auth-token X, --password X (at the value);
//   - NAME=value (an env wrapper, another program's -e) as an env value;
//   - a credential by its shape (credential) in any other argument: a token
//     after the program name (npx -y @x/server ghp_..., uvx mcp-x sk-...,
//     node s.js xoxb-..., after a docker image), a connection string with
//     a password (postgres://, mysql://, mongodb+srv://, redis://:pass@,
//     amqp://), a URL with a secret query parameter.
//
// Each of these holding a placeholder instead (--api-key YOUR_KEY,
// "Authorization: Bearer YOUR_PAT", <YOUR_API_KEY>, postgres://u:<password>@)
// is a placeholder finding; each holding a reference the client expands
// into argv (${input:ID} of a password input, ${env:GITHUB_TOKEN}, any
// reference as a secret option's value) is a secret-in-argv finding.
//
// An argument holding blanks (sh -c "npx ... --token X", a command string)
// is read word by word, each word at the argument's position; the shell
// expands every $VAR, ${VAR} (cmd: %VAR%) in it. What is already flagged
// at the same position (docker -e, bwrap --setenv) is not flagged twice.
func (e *entry) argSecrets(cmd arg, args []arg) {
	type word struct {
		arg
		shell bool // a word of a command string
	}
	var words []word
	ex := expansionOf(e.t.File)
	for _, a := range append([]arg{cmd}, args...) {
		if strings.Contains(a.s, ":") {
			if m := header.FindStringSubmatch(a.s); m != nil && secretNamed(m[1]) {
				e.argValue(m[1], m[2], a.pos, ex, false)
				continue
			}
		}
		if strings.ContainsAny(a.s, " \t\n") && !privateKey.MatchString(a.s) {
			for _, w := range shellWords(a.s) {
				words = append(words, word{arg{w, a.pos}, true})
			}
			continue
		}
		words = append(words, word{a, false})
	}
	for i, a := range words {
		opt, val, joined := strings.Cut(a.s, "=")
		switch {
		case strings.HasPrefix(a.s, "-") && secretNamed(strings.TrimLeft(opt, "-")):
			switch {
			case joined:
				e.argValue(opt, val, a.pos, ex, a.shell)
			case i+1 < len(words) && !strings.HasPrefix(words[i+1].s, "-"):
				e.argValue(opt, words[i+1].s, words[i+1].pos, ex, words[i+1].shell)
			}
			continue
		case joined && envName.MatchString(opt):
			e.argValue(opt, val, a.pos, ex, a.shell)
			continue
		}
		switch {
		case credential(a.s) != "":
			e.secret("an argument ("+credential(a.s)+")", a.pos)
		case e.argRefs(a.s, a.pos, ex, a.shell):
		case secretshape.ArgPlaceholder(a.s):
			e.once(readback.FlagSecretPlaceholder, "an argument", a.pos)
		}
	}
}

// argValue flags the value of a secret-named option, header or variable
// in argv: inline, a placeholder, or a reference expanded there.
func (e *entry) argValue(name, val string, pos position.Pos, ex expansion, shell bool) {
	switch {
	case secretKind(name, val) != "":
		e.secret(name, pos)
	case e.argRefs(val, pos, ex, shell):
	case secretNamed(name) && e.expands(val, ex, shell):
		e.once(readback.FlagSecretInArgv, "the value of "+name+" ("+val+")", pos)
	case secretshape.Placeholder(name, val, false):
		e.once(readback.FlagSecretPlaceholder, name, pos)
	}
}

// argRefs flags the references of an argument that name a secret (a
// password input, a secret-named variable) and that the client, or the
// shell of a command string, expands into argv; it reports whether one
// was.
func (e *entry) argRefs(s string, pos position.Pos, ex expansion, shell bool) bool {
	for _, r := range secretshape.SecretRefs(s) {
		switch {
		case !expanded(r.Form, ex, shell):
		case r.Form == "${input:}" && e.secrets.inputs[r.Name]:
			e.once(readback.FlagSecretInArgv, "the secret input "+r.Name, pos)
			return true
		case r.Form != "${input:}":
			written := "%" + r.Name + "%"
			switch r.Form {
			case "$":
				written = "$" + r.Name
			case "${}", "${env:}":
				written = strings.TrimSuffix(r.Form, "}") + r.Name + "}"
			}
			e.once(readback.FlagSecretInArgv, "the secret variable "+r.Name+" ("+written+")", pos)
			return true
		}
	}
	return false
}

// expands reports whether s holds a reference the client (or the shell)
// expands.
func (e *entry) expands(s string, ex expansion, shell bool) bool {
	if !strings.ContainsAny(s, "$%") {
		return false
	}
	for _, m := range refForms.FindAllStringSubmatch(s, -1) {
		form := m[3] + m[4] // $, %
		if m[2] != "" {
			form = "${" + m[1] + "}"
		}
		if expanded(form, ex, shell) {
			return true
		}
	}
	return false
}

var refForms = lazyre.New(`\$\{(input:|env:)?[^}]*(\})|(\$)[A-Za-z_]|(%)[A-Za-z_][A-Za-z0-9_]*%`)

// expanded reports whether a reference written in form reaches argv
// expanded: what the client expands (literal.go), and in a command string
// what the shell does ($VAR, ${VAR}, %VAR%); a client not known by its
// file's name is taken to expand ${VAR}, ${env:VAR} and ${input:ID}.
func expanded(form string, ex expansion, shell bool) bool {
	switch {
	case form == "${env:}":
		return ex.envColon || !ex.known
	case form == "${input:}":
		return ex.vscode || !ex.known
	case shell:
		return true
	case form == "${}":
		return ex.braces || !ex.known
	case form == "$":
		return ex.dollar
	}
	return false
}

// urlSecret flags a remote entry's URL that holds a credential.
func (e *entry) urlSecret(u arg) {
	if what := credential(u.s); what != "" {
		e.secret("the url ("+what+")", u.pos)
	}
}

// secret flags an inline secret named what at pos, once per position.
func (e *entry) secret(what string, pos position.Pos) { e.once(readback.FlagSecretInline, what, pos) }

// once flags k at pos, unless a secret finding (inline, placeholder, in
// argv) is there already.
func (e *entry) once(k readback.FlagKind, what string, pos position.Pos) {
	for _, f := range e.t.Flags {
		switch f.Kind {
		case readback.FlagSecretInline, readback.FlagSecretPlaceholder, readback.FlagSecretInArgv:
			if f.Pos == pos {
				return
			}
		}
	}
	e.flag(k, what, pos)
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
