package schema

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestDocsSayTheLimits holds docs/policy.md ("Limits", "Input refused") to
// the readers' figures.
func TestDocsSayTheLimits(t *testing.T) {
	b, err := os.ReadFile("../docs/policy.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Join(strings.Fields(string(b)), " ")
	for _, want := range []string{
		fmt.Sprintf("at most %d MiB (`schema.MaxPolicySize`)", MaxPolicySize>>20),
		fmt.Sprintf("at most %d deep (`schema.jsonnetMaxNesting`)", jsonnetMaxNesting),
		fmt.Sprintf("for at most %d second", int(jsonnetTimeout.Seconds())),
		fmt.Sprintf("%d MiB of memory (`schema.jsonnetMaxHeap`)", jsonnetMaxHeap>>20),
		fmt.Sprintf("at most %d MiB of JSON (`schema.jsonnetMaxOutput`)", jsonnetMaxOutput>>20),
		fmt.Sprintf("at most %d deep (`schema.maxNesting`)", maxNesting),
		fmt.Sprintf("more than %s values (`schema.maxAliasValues`", thousands(maxAliasValues)),
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("docs/policy.md does not say %q", want)
		}
	}
}

func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
