// Package toolpin records a server's tool surface — the names,
// descriptions and schemas its tools/list shows a client — as the
// reviewed pin file a policy's `tools: pin: true` reads
// (mcpolicy.pins/SERVER.json beside the policy), and compares a live
// surface with a pin. The relay hides, or refuses, a tool whose
// description changes after the pin (a rug pull, a poisoned description);
// `mcpolicy pin` is how the pin is made and re-made, on review.
package toolpin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mcpolicy/mcpolicy/evidence/mcpcall"
	"github.com/mcpolicy/mcpolicy/internal/hostfile"
	"github.com/mcpolicy/mcpolicy/internal/printable"
	"github.com/mcpolicy/mcpolicy/internal/toolpolicy"
)

// Dir is the folder of pin files, beside the policy file. Its name is
// mcpolicy.*, a protected name: no read-write grant lets a server rewrite
// its own pin.
const Dir = "mcpolicy.pins"

// File is the pin file of server for the policy file policyFile.
func File(policyFile, server string) string {
	return filepath.Join(filepath.Dir(policyFile), Dir, server+".json")
}

// DefaultTimeout bounds a server's start and its tools/list.
const DefaultTimeout = 60 * time.Second

// MaxFile bounds a pin file read back: what mcpcall.ListToolsRaw keeps,
// indented.
const MaxFile = 4 * mcpcall.MaxToolsBytes

// List starts argv (the server, confined) with env, reads its whole
// tools/list and returns it as a pin of server: tools canonical, sorted,
// digest set. ctx bounds it (DefaultTimeout when it has no deadline).
// The error quotes the end of the server's stderr.
func List(ctx context.Context, server string, argv, env []string) (*toolpolicy.Pin, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	raw, _, err := mcpcall.ListToolsRaw(ctx, argv, env)
	if errors.Is(err, context.DeadlineExceeded) {
		return nil, fmt.Errorf("server %q did not list its tools in time: %w", server, err)
	}
	if err != nil {
		return nil, err
	}
	return FromRaw(server, raw)
}

// FromRaw is the pin of the tools as tools/list gave them.
func FromRaw(server string, raw []json.RawMessage) (*toolpolicy.Pin, error) {
	tools := make([]toolpolicy.PinnedTool, 0, len(raw))
	for i, r := range raw {
		// As the relay reads a listed tool: a key named twice, or spelled
		// so that Go's case-insensitive decoding below reads another value
		// than a client does, is no tool to pin.
		if _, err := toolpolicy.ObjectKeys(r, pinnedKeys...); err != nil {
			return nil, fmt.Errorf("tools/list: tool %d: %v", i, err)
		}
		var t toolpolicy.PinnedTool
		if err := json.Unmarshal(r, &t); err != nil {
			return nil, fmt.Errorf("tools/list: tool %d: %v", i, err)
		}
		if t.Name == "" {
			return nil, fmt.Errorf("tools/list: tool %d has no name", i)
		}
		tools = append(tools, t)
	}
	return New(server, tools)
}

// pinnedKeys are the members of a tool a pin records.
var pinnedKeys = []string{"name", "title", "description", "inputSchema", "outputSchema", "annotations"}

// New is the pin of tools: canonical, sorted by name, with its digest.
func New(server string, tools []toolpolicy.PinnedTool) (*toolpolicy.Pin, error) {
	c, err := toolpolicy.Canonical(tools)
	if err != nil {
		return nil, fmt.Errorf("tools/list: %w", err)
	}
	d, err := toolpolicy.PinDigest(c)
	if err != nil {
		return nil, err
	}
	return &toolpolicy.Pin{Server: server, Digest: d, Tools: c}, nil
}

// Encode is the pin file's content: indented JSON and a newline. The
// same surface always gives the same bytes.
func Encode(p *toolpolicy.Pin) ([]byte, error) {
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	e.SetIndent("", "  ")
	if err := e.Encode(p); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Decode reads a pin file's content, refusing one whose digest is not
// its tools' (an edit by hand, or a server's).
func Decode(file string, b []byte) (*toolpolicy.Pin, error) {
	var p toolpolicy.Pin
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&p); err != nil {
		return nil, fmt.Errorf("%s: not a pin file: %v", file, err)
	}
	// The file is indented: its tools are compared as New makes them.
	tools, err := toolpolicy.Canonical(p.Tools)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	p.Tools = tools
	want, err := toolpolicy.PinDigest(tools)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	if p.Digest != want {
		return nil, fmt.Errorf("%s: its digest is %s, but its tools hash to %s: it was edited after mcpolicy pin wrote it; run `mcpolicy pin %s` again and review the diff", file, p.Digest, want, p.Server)
	}
	return &p, nil
}

// Read reads the pin file at file, nil when there is none. untrusted are
// the folders a server may write, as hostfile takes them.
func Read(file string, untrusted []string) (*toolpolicy.Pin, error) {
	b, err := hostfile.ReadFile(file, untrusted)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFile {
		return nil, fmt.Errorf("%s: larger than %d MiB: not a pin file mcpolicy wrote", file, MaxFile>>20)
	}
	return Decode(file, b)
}

// Write writes p to file, atomically (a reader sees the old pin or the
// new one), the folder made as needed; untrusted as Read takes them.
func Write(file string, p *toolpolicy.Pin, untrusted []string) error {
	b, err := Encode(p)
	if err != nil {
		return err
	}
	return hostfile.WriteFile(file, b, 0o644, untrusted)
}

// Change is one tool that differs between two pins.
type Change struct {
	Tool string
	Kind string // "added", "removed" or "changed"
	// Parts are what changed of a changed tool: title, description,
	// inputSchema, outputSchema, annotations.
	Parts []string
}

// String is the change as pin prints it; the tool's name is the
// server's, shown as what it is.
func (c Change) String() string {
	s := fmt.Sprintf("%s %q", c.Kind, printable.String(c.Tool))
	if len(c.Parts) > 0 {
		s += ": " + strings.Join(c.Parts, ", ")
	}
	return s
}

// Compare lists the tools of now that old does not pin as they are, by
// name: added, removed, changed (with the parts), as the relay compares
// them (toolpolicy.ComparePin). A nil old pins nothing: every tool is
// added.
func Compare(old, now *toolpolicy.Pin) []Change {
	if old == nil {
		old = &toolpolicy.Pin{}
	}
	pcs, err := toolpolicy.ComparePin(old, now.Tools)
	if err != nil { // Decode and New made both canonical: it cannot
		return []Change{{Kind: "unreadable: " + err.Error()}}
	}
	kinds := map[string]string{toolpolicy.PinNew: "added", toolpolicy.PinMissing: "removed", toolpolicy.PinChanged: "changed"}
	out := make([]Change, 0, len(pcs))
	for _, c := range pcs {
		out = append(out, Change{Tool: c.Tool, Kind: kinds[c.Change], Parts: c.Parts})
	}
	slices.SortFunc(out, func(a, b Change) int { return strings.Compare(a.Tool, b.Tool) })
	return out
}
