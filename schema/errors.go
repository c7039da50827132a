package schema

import (
	"sort"
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/position"
)

// Pos is a position in a policy file; an alias, so code written against
// schema.Pos keeps compiling while positions live in the leaf package.
type Pos = position.Pos

// Error is one problem in a policy, at a position, about one field.
type Error struct {
	Pos  Pos
	Path string // e.g. servers."code-index".mounts[0].mode; empty for file-level errors
	Msg  string
	Hint string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Pos.String())
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	if e.Hint != "" {
		b.WriteString("\n\thint: ")
		b.WriteString(e.Hint)
	}
	return b.String()
}

// Errors is a list of policy problems. It is returned as one error so callers
// can tell invalid policies (exit code 2) from other failures.
type Errors []*Error

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Sort orders errors by file, line, column, then path, so output is stable.
func (es Errors) Sort() {
	sort.SliceStable(es, func(i, j int) bool {
		a, b := es[i], es[j]
		if a.Pos.File != b.Pos.File {
			return a.Pos.File < b.Pos.File
		}
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line < b.Pos.Line
		}
		if a.Pos.Col != b.Pos.Col {
			return a.Pos.Col < b.Pos.Col
		}
		return a.Path < b.Path
	})
}

// Err returns nil for an empty list, so `return errs.Err()` reads naturally.
func (es Errors) Err() error {
	if len(es) == 0 {
		return nil
	}
	es.Sort()
	return es
}
