package lint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode"

	"github.com/mcpolicy/mcpolicy/internal/lazyre"
	"github.com/mcpolicy/mcpolicy/internal/toolpolicy"
)

// Tool poisoning: a tool's description (or any text of its schema) that
// speaks to the model rather than describing the tool. The model reads
// every listed tool's text as instructions, so a description can steer it
// to read a key, call another tool or keep something from the user — the
// shapes published attacks use. These are the shapes; a description that
// says what the tool does in plain words matches none.
var poisonShapes = []struct {
	what string
	re   *lazyre.RE
}{
	{"a tag that addresses the model (<IMPORTANT>, <system>, <instructions>)", lazyre.New(`(?i)<\s*/?\s*(important|system|instructions?|secret|hidden|admin|critical|note_to_(ai|assistant|model))\b[^>]*>|\[/?INST\]|<\|im_(start|end)\|>`)},
	{"an instruction to ignore other instructions", lazyre.New(`(?i)\b(ignore|disregard|forget|override)\b.{0,40}\b(previous|prior|above|earlier|other|all|system)\b.{0,20}\b(instructions?|prompts?|rules|messages?)\b`)},
	{"an instruction to keep something from the user", lazyre.New(`(?i)\b(do\s*n[o']t|never|without)\b.{0,20}\b(tell|telling|inform|informing|mention|mentioning|show|showing|reveal|revealing|notify|notifying|alert|alerting|ask|asking)\b.{0,20}\b(the\s+)?user\b|\b(hide|conceal)\b.{0,30}\bfrom\s+the\s+user\b|\bthe\s+user\s+(must|should)\s+not\s+(know|see|be\s+told)`)},
	{"an instruction to act before or instead of the call", lazyre.New(`(?i)\b(before|prior\s+to|after)\s+(using|calling|invoking|running)\s+(this|any|the)\b.{0,40}\b(you\s+must|must|always|first|read|call|send|include|pass)\b|\byou\s+must\s+(first\s+)?(read|call|send|include|pass|fetch|upload|cat|open)\b`)},
	{"a reference to a secret file (~/.ssh, id_rsa, .aws/credentials, .env, mcp.json)", lazyre.New(`(?i)(~|\$HOME|%USERPROFILE%)?/?\.ssh\b|(^|[^a-z0-9])(id_(rsa|ed25519|ecdsa|dsa)|ssh[\s_-]?(private[\s_-]?)?keys?)($|[^a-z0-9])|\.aws/credentials|\.config/gcloud|\.netrc\b|(^|[\s"'/])\.env\b|\bmcp\.json\b|claude_desktop_config|\.cursor/mcp|/etc/(passwd|shadow)\b|\bprivate[\s_-]?key\b`)},
	{"an instruction to send data somewhere", lazyre.New(`(?i)\b(send|post|upload|forward|exfiltrate|transmit|copy)\b.{0,40}\b(to|into)\b.{0,20}(https?://|\b[a-z0-9-]+\.[a-z]{2,}\b/|\bwebhook\b|\bemail\b)`)},
	{"a claim that the user already agreed", lazyre.New(`(?i)\bthe\s+user\s+(has\s+)?(already\s+)?(approved|consented|authori[sz]ed|agreed|allowed)\b`)},
	{"a rule for another tool (shadowing)", lazyre.New(`(?i)\bwhen(ever)?\b.{0,30}\b(the\s+)?[a-z0-9_.-]+\s+tool\s+is\s+(called|used|invoked)\b|\b(all|any|every)\s+(other\s+)?tools?\b.{0,30}\b(must|should|always)\b`)},
}

// Hidden text: characters a reviewer reading the pin does not see that a
// model reads (zero-width, bidirectional overrides, the Unicode tag block
// that spells ASCII invisibly).
func hiddenRune(r rune) bool {
	switch {
	case r >= 0x200B && r <= 0x200F, r >= 0x2060 && r <= 0x2064, r == 0xFEFF, r == 0x00AD,
		r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069,
		r >= 0xE0000 && r <= 0xE007F:
		return true
	}
	return unicode.Is(unicode.Co, r) // private use: no glyph a reviewer can read
}

// ToolPoisoning is one shape found in one pinned tool's text.
type ToolPoisoning struct {
	Tool, Where, What, Excerpt string
}

// maxPoisonText bounds the text read per tool: a description longer than
// this is itself reported (what a reviewer cannot read, a model still does).
const maxPoisonText = 64 << 10

// PoisonedTools reads each pinned tool's title, description and every
// string of its schemas and annotations for the shapes above.
func PoisonedTools(pin *toolpolicy.Pin) []ToolPoisoning {
	if pin == nil {
		return nil
	}
	var out []ToolPoisoning
	for _, t := range pin.Tools {
		texts := [][2]string{{"title", t.Title}, {"description", t.Description}}
		for _, f := range []struct {
			name string
			raw  json.RawMessage
		}{{"inputSchema", t.InputSchema}, {"outputSchema", t.OutputSchema}, {"annotations", t.Annotations}} {
			texts = append(texts, schemaStrings(f.name, f.raw)...)
		}
		total := 0
		for _, tx := range texts {
			where, s := tx[0], tx[1]
			total += len(s)
			if i := strings.IndexFunc(s, hiddenRune); i >= 0 {
				r := []rune(s[i:])[0]
				out = append(out, ToolPoisoning{t.Name, where, "hidden characters a reviewer does not see (" + fmt.Sprintf("U+%04X", r) + ")", excerpt(s, i)})
			}
			for _, p := range poisonShapes {
				if loc := p.re.FindStringIndex(s); loc != nil {
					out = append(out, ToolPoisoning{t.Name, where, p.what, excerpt(s, loc[0])})
				}
			}
		}
		if total > maxPoisonText {
			out = append(out, ToolPoisoning{t.Name, "description", fmt.Sprintf("%d bytes of text, more than a reviewer reads (%d)", total, maxPoisonText), ""})
		}
	}
	return out
}

// schemaStrings are the string values of a JSON document (descriptions,
// titles, enum values, defaults), each with its JSON path.
func schemaStrings(name string, raw json.RawMessage) [][2]string {
	if len(raw) == 0 {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return nil
	}
	var out [][2]string
	var walk func(at string, v any)
	walk = func(at string, v any) {
		switch x := v.(type) {
		case string:
			out = append(out, [2]string{at, x})
		case []any:
			for i, e := range x {
				walk(fmt.Sprintf("%s[%d]", at, i), e)
			}
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				out = append(out, [2]string{at + " key", k}) // a property name speaks to the model too
				walk(at+"."+k, x[k])
			}
		}
	}
	walk(name, v)
	return out
}

// excerpt is up to 60 characters of s from about i, on one line, quoted
// where it shows hidden runes.
func excerpt(s string, i int) string {
	start := i // from the word the shape starts in
	for start > 0 && i-start < 20 && s[start-1] != ' ' && s[start-1] != '\n' {
		start--
	}
	for start > 0 && !isRuneStart(s[start]) {
		start--
	}
	r := []rune(s[start:])
	if len(r) > 60 {
		r = append(r[:60], '…')
	}
	e := strings.Join(strings.Fields(string(r)), " ")
	if strings.IndexFunc(e, hiddenRune) >= 0 || strings.ContainsRune(e, '\uFFFD') {
		return fmt.Sprintf("%+q", e)
	}
	return e
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
