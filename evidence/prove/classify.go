package prove

import (
	"fmt"
	"sort"
	"strings"
	"unicode"
)

// How a tool uses a path argument decides what the probe tries and what
// the plan expects: a path a tool writes (write_file's path, move_file's
// source and destination, create_directory's path) is probed as a write,
// denied in a read-only mount and outside every grant, allowed in a
// read-write one; a path it reads is probed as a read. The tool's name,
// its description and its inputSchema (tools/list, from the server
// itself, confined) say which. A hostile server can describe a write as a
// read: whatever the classification, prove also watches the host for a
// change the plan denies (ServerRow.Host).

// ToolInfo is what tools/list says of one tool.
type ToolInfo struct {
	Name        string            `json:"name"`
	Description string            `json:"description,omitempty"`
	Params      map[string]string `json:"params,omitempty"` // argument -> its description in inputSchema
	ReadOnly    bool              `json:"readOnlyHint,omitempty"`
	Destructive bool              `json:"destructiveHint,omitempty"`
}

// Uses of a path argument.
const (
	UseRead  = "read"
	UseWrite = "write"
)

var (
	writeWords = words("write writes writing written create creates make mkdir mkdirs new edit edits modify modifies update updates move moves mv rename renames delete deletes remove removes rm rmdir unlink append appends save saves put patch replace overwrite overwrites upload touch truncate chmod chown link symlink copy copies cp duplicate insert store extract unzip untar download destination")
	readWords  = words("read reads get gets list lists ls search searches find finds grep stat info tree traverse view show shows cat open head tail glob describe inspect count diff load print display fetch query check")
	copyWords  = words("copy copies cp duplicate")
	destKeys   = words("destination dest dst target to output out outfile new newpath newname")
	sourceKeys = words("source src from input origin old oldpath")
)

func words(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// tokens splits a name (snake, kebab or camel case) or a sentence into
// lower-case words.
func tokens(s string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	prev := rune(0)
	for _, r := range s {
		switch {
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			flush()
			cur = append(cur, r)
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			cur = append(cur, r)
		default:
			flush()
		}
		prev = r
	}
	flush()
	return out
}

// firstOf is the first token of ts in one of the sets, and which.
func firstOf(ts []string) (string, string) {
	for _, t := range ts {
		switch {
		case writeWords[t]:
			return t, UseWrite
		case readWords[t]:
			return t, UseRead
		}
	}
	return "", ""
}

// anyWrite is the first token of ts that says write.
func anyWrite(ts []string) string {
	for _, t := range ts {
		if writeWords[t] {
			return t
		}
	}
	return ""
}

// Classify says how tool uses its argument key, and why. Most specific
// first: the argument's own name (a destination is written), its
// description in the schema (any word of writing wins), the tool's name
// (any word of writing wins; copy reads its source and writes the rest),
// the tool's annotations, its description. Nothing
// saying write, it is a read.
func Classify(tool ToolInfo, key string) (use, why string) {
	kt := append(tokens(key), "")
	if destKeys[kt[0]] {
		return UseWrite, fmt.Sprintf("the argument's name %q says destination", key)
	}
	if d := tool.Params[key]; d != "" {
		if w := anyWrite(tokens(d)); w != "" {
			return UseWrite, fmt.Sprintf("its description in the schema says %q (%q)", w, d)
		}
		if w, u := firstOf(tokens(d)); u != "" {
			return u, fmt.Sprintf("its description in the schema says %q (%q)", w, d)
		}
	}
	nt := tokens(tool.Name)
	if w := anyWrite(nt); w != "" {
		if copyWords[w] && sourceKeys[kt[0]] {
			return UseRead, fmt.Sprintf("the tool's name says %q: its %s is read", w, key)
		}
		return UseWrite, fmt.Sprintf("the tool's name says %q", w)
	}
	if w, u := firstOf(nt); u != "" {
		return u, fmt.Sprintf("the tool's name says %q", w)
	}
	switch {
	case tool.Destructive:
		return UseWrite, "the tool's annotations say destructive"
	case tool.ReadOnly:
		return UseRead, "the tool's annotations say read-only"
	}
	if w, u := firstOf(tokens(tool.Description)); u != "" {
		return u, fmt.Sprintf("the tool's description says %q", w)
	}
	return UseRead, "nothing in the tool's name, description or schema says it writes"
}

// toolInfo reads a tools/list entry: the description of each argument
// from the inputSchema's properties.
// What of a tool's description prove keeps.
const (
	maxToolText  = 4096
	maxParams    = 64
	maxParamName = 128
	maxParamText = 1024
	maxSkipped   = 2048 // a reason a run was skipped (the server's error text)
)

func toolInfo(name, description string, schema any, readOnly, destructive bool) ToolInfo {
	// The server chose these texts' lengths and number, and the evidence
	// is read in review: each is cut short, and so is their number (a red
	// team's 1 MB description made a 26 MB evidence.json).
	ti := ToolInfo{Name: name, Description: clip(description, maxToolText), ReadOnly: readOnly, Destructive: destructive, Params: map[string]string{}}
	if s, ok := schema.(map[string]any); ok {
		if props, ok := s["properties"].(map[string]any); ok {
			keys := make([]string, 0, len(props))
			for k := range props {
				if len(k) <= maxParamName {
					keys = append(keys, k)
				}
			}
			sort.Strings(keys)
			if len(keys) > maxParams {
				keys = keys[:maxParams]
			}
			for _, k := range keys {
				if p, ok := props[k].(map[string]any); ok {
					if d, ok := p["description"].(string); ok {
						ti.Params[k] = clip(d, maxParamText)
					}
				}
			}
		}
	}
	return ti
}
