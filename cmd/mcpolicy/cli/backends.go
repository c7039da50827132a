package cli

import (
	"strings"

	"github.com/mcpolicy/mcpolicy/emit"
)

// backendNames names backends, for help text derived from the registry.
func backendNames(bs []emit.Backend) []string {
	var names []string
	for _, b := range bs {
		names = append(names, b.Name())
	}
	return names
}

// orList renders names as "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
