package prove

import (
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/lazyre"
)

// TestPatternsCompile: the package's patterns, compiled on first use,
// fail here rather than in a user's command.
func TestPatternsCompile(t *testing.T) { lazyre.CompileAll() }
