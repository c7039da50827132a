package toolpolicy

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/mcpolicy/mcpolicy/internal/printable"
)

// What a PinChange says of a tool.
const (
	PinChanged = "changed" // listed with other content than pinned
	PinNew     = "new"     // listed, not in the pin
	PinMissing = "missing" // pinned, not listed
)

// ExcerptRunes bounds the excerpt of a changed description a log carries.
const ExcerptRunes = 80

// PinChange is how one listed tool differs from the pin.
type PinChange struct {
	Tool   string
	Change string   // PinChanged, PinNew or PinMissing
	Parts  []string // for PinChanged: "title", "description", "inputSchema", "outputSchema", "annotations"
	// Excerpt is the start of the listed description (ExcerptRunes at
	// most, printable), for a log: never the whole text a server wrote.
	Excerpt string
}

// String is the change as a log's reason says it.
func (c PinChange) String() string {
	s := c.Summary()
	if c.Change == PinChanged && c.Excerpt != "" {
		s += fmt.Sprintf("; the description now starts %q", c.Excerpt)
	}
	return s
}

// Summary is String without the excerpt: what a client is told. The new
// text is the server's, possibly words aimed at the model, and clients
// show a tool's error to the model: it goes to the launch log alone.
func (c PinChange) Summary() string {
	switch c.Change {
	case PinChanged:
		verb := "differs"
		if len(c.Parts) > 1 {
			verb = "differ"
		}
		return fmt.Sprintf("%s %s from the pin", strings.Join(c.Parts, ", "), verb)
	case PinNew:
		return "not in the pin"
	default:
		return "pinned, no longer listed"
	}
}

// PinCheck compares listed tools with a Pin, one tool at a time, as the
// relay reads them from each page of tools/list.
type PinCheck struct {
	tools   map[string]PinnedTool // canonical
	digests map[string]string
}

// NewPinCheck indexes pin. It refuses a pin whose tools do not canonicalise
// (the compiler has already refused it).
func NewPinCheck(pin *Pin) (*PinCheck, error) {
	c := &PinCheck{tools: map[string]PinnedTool{}, digests: map[string]string{}}
	tools, err := Canonical(pin.Tools)
	if err != nil {
		return nil, fmt.Errorf("pin: %w", err)
	}
	for _, t := range tools {
		d, err := ToolDigest(t)
		if err != nil {
			return nil, fmt.Errorf("pin: %w", err)
		}
		c.tools[t.Name], c.digests[t.Name] = t, d
	}
	return c, nil
}

// Tool compares one listed tool with the pin: nil when it is the pinned
// tool, byte for byte once canonical. A tool whose JSON does not
// canonicalise is changed in every part it has.
func (c *PinCheck) Tool(t PinnedTool) *PinChange {
	pinned, ok := c.tools[t.Name]
	if !ok {
		return &PinChange{Tool: t.Name, Change: PinNew, Excerpt: excerpt(t.Description)}
	}
	d, err := ToolDigest(t)
	if err == nil && d == c.digests[t.Name] {
		return nil
	}
	ch := &PinChange{Tool: t.Name, Change: PinChanged}
	if lc, err := Canonical([]PinnedTool{t}); err == nil {
		t = lc[0]
	}
	for _, p := range []struct {
		name string
		a, b []byte
	}{
		{"title", []byte(pinned.Title), []byte(t.Title)},
		{"description", []byte(pinned.Description), []byte(t.Description)},
		{"inputSchema", pinned.InputSchema, t.InputSchema},
		{"outputSchema", pinned.OutputSchema, t.OutputSchema},
		{"annotations", pinned.Annotations, t.Annotations},
	} {
		if !bytes.Equal(p.a, p.b) {
			ch.Parts = append(ch.Parts, p.name)
		}
	}
	if len(ch.Parts) == 0 { // cannot happen: equal parts, equal digests
		ch.Parts = []string{"content"}
	}
	if pinned.Description != t.Description {
		ch.Excerpt = excerpt(t.Description)
	}
	return ch
}

// Has reports whether the pin holds a tool of that name.
func (c *PinCheck) Has(name string) bool {
	_, ok := c.tools[name]
	return ok
}

// Missing are the pinned tools seen does not hold, sorted by name.
func (c *PinCheck) Missing(seen func(name string) bool) []PinChange {
	var out []PinChange
	for name := range c.tools {
		if !seen(name) {
			out = append(out, PinChange{Tool: name, Change: PinMissing})
		}
	}
	sortChanges(out)
	return out
}

// ComparePin compares a whole tools/list with pin: changed and new tools,
// then missing ones, each sorted by name.
func ComparePin(pin *Pin, listed []PinnedTool) ([]PinChange, error) {
	c, err := NewPinCheck(pin)
	if err != nil {
		return nil, err
	}
	var out []PinChange
	seen := map[string]bool{}
	for _, t := range listed {
		seen[t.Name] = true
		if ch := c.Tool(t); ch != nil {
			out = append(out, *ch)
		}
	}
	sortChanges(out)
	return append(out, c.Missing(func(n string) bool { return seen[n] })...), nil
}

func sortChanges(cs []PinChange) {
	slices.SortFunc(cs, func(a, b PinChange) int { return strings.Compare(a.Tool, b.Tool) })
}

// excerpt is the start of s, ExcerptRunes at most, spelled printable.
func excerpt(s string) string {
	if utf8.RuneCountInString(s) > ExcerptRunes {
		s = string([]rune(s)[:ExcerptRunes]) + "…"
	}
	return printable.String(s)
}
