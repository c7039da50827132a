package clientcfg

import (
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/lazyre"
	"github.com/mcpolicy/mcpolicy/internal/secretshape"
)

// TestPatternsCompile: the package's patterns compile on first use
// (lazyre); an invalid one must fail here, not in a user's command.
func TestPatternsCompile(t *testing.T) {
	secretshape.TokenFormats() // built on first use
	lazyre.CompileAll()
}
