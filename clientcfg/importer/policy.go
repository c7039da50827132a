// Package importer turns the entries of the MCP client configs a user
// already has into policies: for each local server, one policy with the
// narrowest grants its entry implies (`mcpolicy import`). It reads the
// entries through clientcfg, as lint does, and writes nothing itself but
// what its callers ask for: the policy text, and the env file lines for
// the secret values an entry held inline.
package importer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Policy is one server's imported policy, each part with the reason it
// was given (rendered as comments).
type Policy struct {
	Server      string
	Description string
	Header      []string // comments above the server: where it came from, what was resolved
	Image       string
	Command     []string
	CommandWhy  []string
	Workdir     string
	Runtime     Item // Value "" keeps the schema's default (system)
	Packs       []Item
	Backends    Items
	Mounts      []Mount
	Scratch     *Scratch
	Env         []Item // names passed through
	SetEnv      []Pair // constant values
	Allow       []Item // egress destinations, host:port
}

// Item is one value and why it is there.
type Item struct{ Value, Why string }

// Items is a list with one reason.
type Items struct {
	Values []string
	Why    string
}

// Pair is one constant variable and why.
type Pair struct{ Name, Value, Why string }

// Mount is one mount grant: source and target as the policy writes them
// ("~/..." under the home folder), read-only unless RW.
type Mount struct {
	Source, Target string
	RW             bool
	Why            string
	// Folder: the source is a folder on this machine, so it can hide
	// paths (a server with egress gets hide: [".env*"] there).
	Folder bool
}

// EgressHide is what an imported server with egress hides in each folder
// it mounts: env files next to code are the usual secrets, and a server
// that can read one and reach the network can send it (docs/policy.md).
const EgressHide = ".env*"

// Scratch is the bounded scratch tmpfs.
type Scratch struct{ Target, Size, Why string }

// Grants counts the grants the policy holds, as explain counts them:
// each mount, the scratch, each env name and value, each destination and
// each pack.
func (p *Policy) Grants() int {
	n := len(p.Mounts) + len(p.Env) + len(p.SetEnv) + len(p.Allow) + len(p.Packs)
	if p.Scratch != nil {
		n++
	}
	return n
}

// GrantLines are the grants, one line each, for the command's report.
func (p *Policy) GrantLines() []string {
	var out []string
	for _, m := range p.Mounts {
		mode := "ro"
		if m.RW {
			mode = "rw"
		}
		out = append(out, fmt.Sprintf("%s mount %s -> %s: %s", mode, m.Source, m.Target, m.Why))
	}
	if s := p.Scratch; s != nil {
		out = append(out, fmt.Sprintf("scratch %s, %s: %s", s.Target, s.Size, s.Why))
	}
	for _, e := range p.Env {
		out = append(out, fmt.Sprintf("env %s: %s", e.Value, e.Why))
	}
	for _, e := range p.SetEnv {
		out = append(out, fmt.Sprintf("setenv %s=%s: %s", e.Name, e.Value, e.Why))
	}
	for _, a := range p.Allow {
		out = append(out, fmt.Sprintf("egress %s: %s", a.Value, a.Why))
	}
	for _, k := range p.Packs {
		out = append(out, fmt.Sprintf("pack %s: %s", k.Value, k.Why))
	}
	return out
}

// quote is a CUE string literal (JSON's escapes are CUE's).
func quote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// comment writes text as // lines at indent, wrapped near 100 columns.
func comment(b *strings.Builder, indent, text string) {
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(indent)*4+len(line)+1+len(w) > 96 {
			fmt.Fprintf(b, "%s// %s\n", indent, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		fmt.Fprintf(b, "%s// %s\n", indent, line)
	}
}

// Render is the policy file: CUE, as the project's examples are, with a
// comment beside every grant saying why import gave it. The same policy
// always renders to the same bytes.
func (p *Policy) Render() []byte {
	var b strings.Builder
	for _, h := range p.Header {
		comment(&b, "", h)
	}
	b.WriteString("version: \"v1\"\n\n")
	fmt.Fprintf(&b, "servers: %s: {\n", quote(p.Server))
	const in = "\t"
	if p.Description != "" {
		fmt.Fprintf(&b, "%sdescription: %s\n", in, quote(p.Description))
	}
	if p.Image != "" {
		fmt.Fprintf(&b, "%simage: %s\n", in, quote(p.Image))
	}
	if len(p.Command) > 0 {
		for _, w := range p.CommandWhy {
			comment(&b, in, w)
		}
		fmt.Fprintf(&b, "%scommand: %s\n", in, quoteAll(p.Command))
	}
	if p.Workdir != "" {
		fmt.Fprintf(&b, "%sworkdir: %s\n", in, quote(p.Workdir))
	}
	if p.Runtime.Value != "" {
		comment(&b, in, p.Runtime.Why)
		fmt.Fprintf(&b, "%sruntime: %s\n", in, quote(p.Runtime.Value))
	}
	if len(p.Backends.Values) > 0 {
		comment(&b, in, p.Backends.Why)
		fmt.Fprintf(&b, "%sbackends: %s\n", in, quoteAll(p.Backends.Values))
	}
	p.renderLists(&b, in)
	b.WriteString("}\n")
	return []byte(b.String())
}

// renderLists writes the grants, each with its reason above it.
func (p *Policy) renderLists(b *strings.Builder, in string) {
	if len(p.Packs) > 0 {
		fmt.Fprintf(b, "%spacks: [\n", in)
		for _, k := range p.Packs {
			comment(b, in+in, "GRANT: "+k.Why)
			fmt.Fprintf(b, "%s%s%s,\n", in, in, quote(k.Value))
		}
		fmt.Fprintf(b, "%s]\n", in)
	}
	if len(p.Mounts) > 0 {
		fmt.Fprintf(b, "%smounts: [\n", in)
		for _, m := range p.Mounts {
			mode := "read-only"
			if m.RW {
				mode = "read-write"
			}
			comment(b, in+in, "GRANT ("+mode+"): "+m.Why)
			fmt.Fprintf(b, "%s%s{source: %s, target: %s", in, in, quote(m.Source), quote(m.Target))
			if m.RW {
				b.WriteString(`, mode: "rw"`)
			}
			if m.Folder && len(p.Allow) > 0 {
				// A subtraction: masked at spawn, EACCES.
				fmt.Fprintf(b, ", hide: [%s]", quote(EgressHide))
			}
			b.WriteString("},\n")
		}
		fmt.Fprintf(b, "%s]\n", in)
	}
	if s := p.Scratch; s != nil {
		comment(b, in, "GRANT: "+s.Why)
		fmt.Fprintf(b, "%sscratch: {target: %s, size: %s}\n", in, quote(s.Target), quote(s.Size))
	}
	if len(p.Env) > 0 {
		fmt.Fprintf(b, "%senv: [\n", in)
		for _, e := range p.Env {
			comment(b, in+in, "GRANT: "+e.Why)
			fmt.Fprintf(b, "%s%s%s,\n", in, in, quote(e.Value))
		}
		fmt.Fprintf(b, "%s]\n", in)
	}
	if len(p.SetEnv) > 0 {
		fmt.Fprintf(b, "%ssetenv: {\n", in)
		for _, e := range p.SetEnv {
			comment(b, in+in, "GRANT: "+e.Why)
			fmt.Fprintf(b, "%s%s%s: %s\n", in, in, quote(e.Name), quote(e.Value))
		}
		fmt.Fprintf(b, "%s}\n", in)
	}
	if len(p.Allow) > 0 {
		fmt.Fprintf(b, "%snetwork: allow: [\n", in)
		for _, a := range p.Allow {
			comment(b, in+in, "GRANT: "+a.Why)
			fmt.Fprintf(b, "%s%s%s,\n", in, in, quote(a.Value))
		}
		fmt.Fprintf(b, "%s]\n", in)
	}
}
