package toolpolicy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Canonical returns tools as the pin compares and hashes them: sorted by
// name, each JSON value re-encoded with sorted keys, no insignificant
// space and numbers as written, so the same surface gives the same bytes
// whatever the server's encoder did.
func Canonical(tools []PinnedTool) ([]PinnedTool, error) {
	out := make([]PinnedTool, 0, len(tools))
	for _, t := range tools {
		c := t
		for _, f := range []*json.RawMessage{&c.InputSchema, &c.OutputSchema, &c.Annotations} {
			if len(*f) == 0 {
				continue
			}
			b, err := canonicalJSON(*f)
			if err != nil {
				return nil, fmt.Errorf("tool %q: %w", t.Name, err)
			}
			*f = b
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b PinnedTool) int { return strings.Compare(a.Name, b.Name) })
	for i := 1; i < len(out); i++ {
		if out[i].Name == out[i-1].Name {
			return nil, fmt.Errorf("tool %q is listed twice", out[i].Name)
		}
	}
	return out, nil
}

// PinDigest is "sha256:HEX" of the canonical JSON of tools.
func PinDigest(tools []PinnedTool) (string, error) {
	c, err := Canonical(tools)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// ToolDigest is "sha256:HEX" of one tool's canonical JSON: what the relay
// compares per tool, so a change hides that tool alone.
func ToolDigest(t PinnedTool) (string, error) {
	c, err := Canonical([]PinnedTool{t})
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(c[0])
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

func canonicalJSON(raw []byte) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, fmt.Errorf("more than one JSON value")
	}
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
