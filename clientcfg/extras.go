package clientcfg

import (
	"fmt"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler/readback"
)

// extras reads what an entry says beyond its launch command: the
// variables it sets (kept with their positions for the launch readers),
// tool calls it approves in advance (Cline's autoApprove, Roo's
// alwaysAllow, Gemini CLI's trust), dangerous-mode variables, and VS
// Code's sandbox (sandboxEnabled, with the entry's "sandbox" object or
// else the file's). Values of an unexpected shape are passed over: they
// are the client's to refuse.
func (e *entry) extras(n, envNode, fileSandbox *node) {
	if envNode != nil && envNode.kind == kObject {
		for _, i := range envNode.members() {
			k := envKey{name: envNode.keys[i], pos: envNode.keyPos[i], valPos: envNode.keyPos[i]}
			if v := envNode.vals[i]; v.kind == kString || v.kind == kOther {
				k.value, k.hasValue, k.valPos = v.str, true, v.pos
				if v.kind != kString {
					k.valPos = envNode.keyPos[i] // positions point at strings and keys
				}
			}
			e.envKeys = append(e.envKeys, k)
			if k.hasValue {
				e.dangerousEnv(k.name, k.value, k.valPos)
			}
		}
	}
	if vars, _ := n.get("env_vars"); vars != nil && vars.kind == kArray { // Codex: forwarded by name
		for _, el := range vars.elems {
			if el.kind == kString {
				e.envKeys = append(e.envKeys, envKey{name: el.str, pos: el.pos, valPos: el.pos})
			}
		}
	}

	for _, key := range []string{"autoApprove", "alwaysAllow"} {
		v, at := n.get(key)
		if v == nil {
			continue
		}
		var tools []string
		switch v.kind {
		case kArray:
			for _, el := range v.elems {
				if el.kind == kString && el.str != "" {
					tools = append(tools, el.str)
				}
			}
		case kOther:
			if v.str == "true" {
				tools = []string{"*"}
			}
		}
		if len(tools) == 0 {
			continue
		}
		e.flag(readback.FlagAutoApprove, fmt.Sprintf("%s runs %s without asking: a prompt injection's calls included", key, toolList(tools)), at)
	}
	if v, at := n.get("trust"); v != nil && v.kind == kOther && v.str == "true" { // Gemini CLI
		e.flag(readback.FlagAutoApprove, "trust: true skips the confirmation of every tool call of this server", at)
	}

	// VS Code's envFile: the client loads the file's variables into the
	// server's environment, secrets as a rule (.env).
	if v, _ := n.get("envFile"); v != nil && v.kind == kString && strings.TrimSpace(v.str) != "" {
		e.clientEnvFile = &arg{v.str, v.pos}
	}
	if v, _ := n.get("headersHelper"); v != nil && v.kind == kString && strings.TrimSpace(v.str) != "" { // Claude Code
		e.flag(readback.FlagHeadersHelper, fmt.Sprintf("headersHelper %q: the client runs this command in a shell on the host, unconfined, each time it connects", v.str), v.pos)
	}
	if v, at := n.get("sandboxEnabled"); v != nil && v.kind == kOther && v.str == "true" {
		s := &clientSandbox{by: "VS Code's sandbox", pos: at}
		cfg, _ := n.get("sandbox")
		if cfg == nil || cfg.kind != kObject {
			cfg = fileSandbox
		}
		fs, _ := cfg.get("filesystem")
		s.allowWrite = stringsOf(fs, "allowWrite")
		s.denyRead = stringsOf(fs, "denyRead")
		net, _ := cfg.get("network")
		s.domains = stringsOf(net, "allowedDomains")
		e.sandbox = s
	}
}

// stringsOf returns the string elements of obj's array member key.
func stringsOf(obj *node, key string) []arg {
	v, _ := obj.get(key)
	if v == nil || v.kind != kArray {
		return nil
	}
	var out []arg
	for _, el := range v.elems {
		if el.kind == kString {
			out = append(out, arg{el.str, el.pos})
		}
	}
	return out
}

// toolList names the tools of an approval list: "every tool" for *.
func toolList(tools []string) string {
	for _, t := range tools {
		if t == "*" {
			return "every tool"
		}
	}
	if len(tools) > 5 {
		return strings.Join(tools[:4], ", ") + fmt.Sprintf(" and %d more tools", len(tools)-4)
	}
	if len(tools) == 1 {
		return "the tool " + tools[0]
	}
	return "the tools " + strings.Join(tools, ", ")
}
