package egress

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
)

// TestHostsResolver: listed names resolve from the table, whatever their
// case, trailing dot or IDN spelling; others go to the next resolver;
// malformed lines are refused with their number.
func TestHostsResolver(t *testing.T) {
	var asked []string
	next := func(_ context.Context, h string) ([]netip.Addr, error) {
		asked = append(asked, h)
		return nil, errors.New("no DNS in this test")
	}
	resolve, err := HostsResolver(strings.NewReader("# stand-ins\n203.0.113.7 api.test bücher.test\n\n::ffff:127.0.0.1 evil.test # rebinding\n"), next)
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]string{"API.test.": "203.0.113.7", "xn--bcher-kva.test": "203.0.113.7", "evil.test": "127.0.0.1"} {
		as, err := resolve(t.Context(), host)
		if err != nil || len(as) != 1 || as[0].String() != want {
			t.Errorf("%s: %v %v, want %s", host, as, err, want)
		}
	}
	if _, err := resolve(t.Context(), "other.test"); err == nil || len(asked) != 1 || asked[0] != "other.test" {
		t.Errorf("an unlisted name: %v, next asked %v", err, asked)
	}
	for _, bad := range []string{"api.test 203.0.113.7\n", "203.0.113.7\n", "# ok\n203.0.113.7 a;b.test\n"} {
		if _, err := HostsResolver(strings.NewReader(bad), nil); err == nil || !strings.Contains(err.Error(), "hosts line") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
