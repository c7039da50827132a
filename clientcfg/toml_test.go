package clientcfg

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

// TestTOMLAgreesWithDecoder: parseTOML, which checks a document without
// go-toml's decoder (quadratic in the tables of one level), accepts and
// refuses what the decoder does, on the shapes TOML's own test suite
// tries: tables and arrays of tables reopened, dotted keys, inline tables
// and static arrays extended, numbers and dates, syntax.
func TestTOMLAgreesWithDecoder(t *testing.T) {
	docs := []string{
		// valid
		"[a]\nx = 1\n[b]\ny = 2\n",
		"[a.b.c]\nz = 9\n[a]\nw = 1\n",
		"[a]\n[a.b]\n",
		"[[a]]\nx = 1\n[[a]]\nx = 2\n",
		"[[a]]\n[a.b]\nx = 1\n[[a]]\n[a.b]\nx = 2\n",
		"[fruit]\napple.color = \"red\"\napple.taste.sweet = true\n[fruit.apple.texture]\nsmooth = true\n",
		"a.b.c = 1\na.b.d = 2\n",
		"a = {b = 1, c.d = 2}\n",
		"a = [1, 2, 3]\nb = [[1], [\"x\"]]\n",
		"n = 0x1F\nm = 1_000\nf = 6.02e23\ninf = -inf\nd = 1979-05-27\nt = 07:32:00\ndt = 1979-05-27T07:32:00Z\n",
		"[mcp_servers.a]\ncommand = \"npx\"\nargs = [\"-y\", \"x\"]\nenv = {A = \"1\"}\n[mcp_servers.a.env2]\nB = \"2\"\n",
		"\"quoted key\" = 1\n'lit' = 2\n",
		// invalid
		"[a]\n[a]\n",
		"a = 1\na = 2\n",
		"a = 1\n[a]\n",
		"a = 1\na.b = 2\n",
		"[a]\nb = 1\n[a.b]\n",
		"a = {b = 1}\n[a]\n",
		"a = {b = 1}\na.c = 2\n",
		"a = {b = 1}\n[a.c]\n",
		"a = [1]\n[[a]]\n",
		"[[a]]\n[a]\n",
		"[a]\n[[a]]\n",
		"[a.b.c]\nz = 9\n[a]\nb.c.t = 1\n",
		"[fruit]\napple.color = \"red\"\n[fruit.apple]\n",
		"[fruit]\napple.taste.sweet = true\n[fruit.apple.taste]\n",
		"a.b = 1\n[a]\n",
		"n = 0123\n",
		"n = 1__0\n",
		"n = _1\n",
		"f = 1.\n",
		"f = .5\n",
		"d = 1979-13-27\n",
		"d = 1979-02-30\n",
		"t = 25:00:00\n",
		"a = [1 2]\n",
		"[a\nb = 1\n",
		"a = \"x\n",
		"a = \"\\q\"\n",
		"= 1\n",
		"a = 1 b = 2\n",
	}
	for i, d := range docs {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			var v map[string]any
			want := toml.Unmarshal([]byte(d), &v)
			_, got := parseTOML("c.toml", []byte(d))
			if (want == nil) != (got == nil) {
				t.Errorf("%q: decoder says %v, parseTOML says %v", d, want, got)
			}
			if got != nil && !strings.HasPrefix(got.Error(), "c.toml:") {
				t.Errorf("%q: error without a position: %v", d, got)
			}
		})
	}
}

// BenchmarkReadCodex reads Codex files of 1,000 and 10,000 servers: the
// time per server must not grow with the file (it did, quadratically).
func BenchmarkReadCodex(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		var sb strings.Builder
		for i := range n {
			fmt.Fprintf(&sb, "[mcp_servers.s%d]\ncommand = \"npx\"\nargs = [\"-y\", \"@x/server-%d\"]\n\n", i, i)
		}
		src := []byte(sb.String())
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				ts, err := parse("config.toml", src, "/home/me", false)
				if err != nil || len(ts) != n {
					b.Fatalf("%d targets, %v", len(ts), err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/server")
		})
	}
}
