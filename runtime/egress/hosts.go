package egress

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/allowlist"
)

// Hosts is an /etc/hosts-style table: canonical name -> addresses.
type Hosts map[string][]netip.Addr

// ParseHosts reads an /etc/hosts-style text (address, then names; #
// comments).
func ParseHosts(r io.Reader) (Hosts, error) {
	table := Hosts{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		addr, err := netip.ParseAddr(f[0])
		if err != nil || len(f) < 2 {
			return nil, fmt.Errorf("hosts line %d: want \"ADDRESS NAME...\"", n)
		}
		for _, name := range f[1:] {
			c, err := allowlist.Canonical(name)
			if err != nil {
				return nil, fmt.Errorf("hosts line %d: %v", n, err)
			}
			table[c] = append(table[c], addr.Unmap())
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return table, nil
}

// HostsResolver resolves the names of an /etc/hosts-style text and sends
// every other name to next (nil: the system resolver). It lets the proxy
// be tested against local servers that stand in for internet hosts, with
// the proxy's checks unchanged: a name listed at a private address is
// still refused unless a rule names that address.
func HostsResolver(r io.Reader, next func(context.Context, string) ([]netip.Addr, error)) (func(context.Context, string) ([]netip.Addr, error), error) {
	table, err := ParseHosts(r)
	if err != nil {
		return nil, err
	}
	return table.Resolver(next), nil
}

// Resolver resolves the table's names and sends every other to next
// (nil: the system resolver).
func (table Hosts) Resolver(next func(context.Context, string) ([]netip.Addr, error)) func(context.Context, string) ([]netip.Addr, error) {
	if next == nil {
		next = func(ctx context.Context, h string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", h)
		}
	}
	return func(ctx context.Context, host string) ([]netip.Addr, error) {
		if c, err := allowlist.Canonical(host); err == nil {
			if as, ok := table[c]; ok {
				return as, nil
			}
		}
		return next(ctx, host)
	}
}

// Names is Proxy.Exempt for a run given this table: an address it puts a
// name at is where its writer says that host is (a local server standing
// in for an internet host, as in the tests), not refused as this
// machine's own; a private one still is.
func (table Hosts) Names(a netip.Addr) bool {
	for _, as := range table {
		for _, b := range as {
			if b == a.Unmap() {
				return true
			}
		}
	}
	return false
}
