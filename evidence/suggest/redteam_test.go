package suggest

// Red-team tests: the path from what a hostile server asks the egress
// proxy for (or writes itself, when the log is the stderr it shares) to
// the patch suggest prints. Each asserts the attack fails: the patch adds
// exactly the exact destinations asked for, nothing else in the policy
// changes, a long or broken line hides no real denial, and nothing
// printed holds a control or bidi character.

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/mcpolicy/mcpolicy/internal/syncbuf"

	"github.com/mcpolicy/mcpolicy/internal/allowlist"
	"github.com/mcpolicy/mcpolicy/runtime/egress"
	"github.com/mcpolicy/mcpolicy/schema"
)

// hostileLog runs the real proxy (allowing api.test:443 and
// *.wild.test:443; every name resolves to a public address, nothing is
// dialled) and sends it each raw request; it returns the decision log.
func hostileLog(t *testing.T, reqs []string) string {
	t.Helper()
	allow, err := allowlist.Parse([]string{"api.test:443", "*.wild.test:443"})
	if err != nil {
		t.Fatal(err)
	}
	log := &syncbuf.Buffer{}
	p := &egress.Proxy{Allow: allow, Log: log, Resolve: func(context.Context, string) ([]netip.Addr, error) {
		return nil, fmt.Errorf("no such host")
	}}
	srv := httptest.NewServer(p)
	defer p.Close()
	defer srv.Close()
	for _, req := range reqs {
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(20 * time.Second))
		go c.Write([]byte(req))
		if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
			resp.Body.Close()
		}
		c.Close()
	}
	srv.Close()
	p.Close()
	return log.String()
}

// hostileRequests: CONNECT and absolute-form GET for targets carrying
// the syntax of CUE, JSON, YAML, shell and terminals, zones, bidi
// overrides, homoglyphs, wildcards, private and metadata addresses,
// ports out of range, and a name of 900 KiB.
func hostileRequests() []string {
	targets := []string{
		`evil.test:443`,
		`EVIL.test.:443`,
		`[2606:4700::1]:443`,
		`[2606:4700::1%25a"b]:443`,
		`[2606:4700::1%25"],mounts:[{source:"/",target:"/h"}],x:["]:443`,
		`[2606:4700::1%25$(id)'x,]:443`,
		`[2606:4700::1%25` + "\u202e" + `moc]:443`,
		`[fe80::1%25eth0]:80`,
		`[::ffff:169.254.169.254]:80`,
		`169.254.169.254:80`,
		`10.0.0.5:8080`,
		`[::1]:22`,
		"a\u202egnp.test:443",
		"аpple.com:443", // Cyrillic а
		`*.test:443`,
		`*:443`,
		`evil.test:99999`,
		`evil.test:0`,
		`API.TEST:22`,
		`a.wild.test:8443`,
		`a,b.test:443`,
		`a"b.test:443`,
		`a\(x).test:443`,
		`a#b.test:443`,
		`a&b*c|d.test:443`,
		`{a}.test:443`,
		strings.Repeat("a.", 450<<10) + "test:443",
	}
	var reqs []string
	for _, tg := range targets {
		reqs = append(reqs,
			"CONNECT "+tg+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
			"GET http://"+tg+"/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	}
	// A method as long as the server likes.
	reqs = append(reqs, strings.Repeat("M", 900<<10)+" http://evil.test/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	return reqs
}

// The only entries the hostile requests may give: exact, public, no zone.
var hostileWant = []string{
	"xn--pple-43d.com:443", // the homoglyph, in punycode: what it is, not what it looks like
	"api.test:22",
	"a.wild.test:8443", // exact, never the wildcard
	"evil.test:443",
	"evil.test:80",
	"[2606:4700::1]:443", // an address: the zones above are not
}

// policies of each format and layout, each with server s and another
// server o whose grants must not move.
var redteamPolicies = []struct{ file, src string }{
	{"p.cue", "version: \"v1\"\nservers: s: {\n\timage: \"x:1\"\n\tnetwork: allow: [\n\t\t\"api.test:443\", // GRANT\n\t]\n\tmounts: [{source: \".\", target: \"/w\"}]\n}\nservers: o: {image: \"y:1\", network: \"none\"}\n"},
	{"p.cue", "version: \"v1\"\nservers: s: {\n\timage: \"x:1\"\n\tnetwork: \"none\"\n}\nservers: o: {image: \"y:1\"}\n"},
	{"p.cue", "version: \"v1\"\nservers: s: {image: \"x:1\"}\nservers: o: {image: \"y:1\"}\n"},
	{"p.json", "{\n  \"version\": \"v1\",\n  \"servers\": {\n    \"s\": {\n      \"image\": \"x:1\",\n      \"network\": {\"allow\": [\"api.test:443\"]}\n    },\n    \"o\": {\"image\": \"y:1\"}\n  }\n}\n"},
	{"p.json", "{\"version\": \"v1\", \"servers\": {\"s\": {\"image\": \"x:1\"}, \"o\": {\"image\": \"y:1\"}}}"},
	{"p.yaml", "version: v1\nservers:\n  s:\n    image: x:1\n    network:\n      allow:\n        - api.test:443 # GRANT\n  o:\n    image: y:1\n"},
	{"p.yaml", "version: v1\nservers:\n  s:\n    image: x:1\n  o:\n    image: y:1\n"},
	{"p.yml", "version: v1\nservers:\n  s:\n    image: x:1\n    network: {allow: [api.test:443]}\n  o:\n    image: y:1\n"},
}

// checkOnlyAdded: new, loaded, is old with exactly add appended to s's
// network.allow; every other field of every server equal.
func checkOnlyAdded(t *testing.T, file string, old, new []byte, add []string) {
	t.Helper()
	po, err := schema.LoadBytes(file, old, "")
	if err != nil {
		t.Fatal(err)
	}
	pn, err := schema.LoadBytes(file, new, "")
	if err != nil {
		t.Fatalf("%s: the patched policy does not load: %v\n%s", file, err, new)
	}
	if len(po.Servers) != len(pn.Servers) {
		t.Fatalf("%s: servers %d -> %d", file, len(po.Servers), len(pn.Servers))
	}
	for i := range po.Servers {
		so, sn := po.Servers[i], pn.Servers[i]
		var have, had []string
		for _, e := range sn.Network.Allow {
			have = append(have, e.Dest)
		}
		for _, e := range so.Network.Allow {
			had = append(had, e.Dest)
		}
		want := had
		if so.Name == "s" {
			want = append(append([]string(nil), had...), add...)
		}
		sort.Strings(have)
		sort.Strings(want)
		if !reflect.DeepEqual(have, want) {
			t.Errorf("%s: server %s allows %q, want %q\n%s", file, so.Name, have, want, new)
		}
		so.Network, sn.Network = schema.Network{}, schema.Network{}
		zeroPos(reflect.ValueOf(&so).Elem())
		zeroPos(reflect.ValueOf(&sn).Elem())
		if !reflect.DeepEqual(so, sn) {
			t.Errorf("%s: server %s changed beyond network.allow:\n%+v\n%+v\n%s", file, so.Name, so, sn, new)
		}
	}
}

// zeroPos clears every position, which an edit moves.
func zeroPos(v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(schema.Pos{}) {
			v.Set(reflect.Zero(v.Type()))
			return
		}
		for i := 0; i < v.NumField(); i++ {
			zeroPos(v.Field(i))
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			zeroPos(v.Index(i))
		}
	case reflect.Pointer:
		if !v.IsNil() {
			zeroPos(v.Elem())
		}
	}
}

// noControls: nothing a terminal would act on, or that would show other
// than it is (ESC, CR, newlines, bidi overrides and isolates, zero-width
// characters).
func noControls(t *testing.T, what, s string) {
	t.Helper()
	for _, r := range s {
		if !unicode.IsPrint(r) || r == unicode.ReplacementChar {
			t.Errorf("%s holds %U: %.200q", what, r, s)
			return
		}
	}
}

func checkPrintable(t *testing.T, res *Result) {
	t.Helper()
	for _, e := range res.Add {
		noControls(t, "an entry", e.Dest)
		for _, m := range e.Methods {
			noControls(t, "a method", m)
		}
	}
	for _, s := range res.Skipped {
		noControls(t, "a skipped destination", s.Dest)
		noControls(t, "a skip's rule", s.Denied)
		noControls(t, "a skip's reason", s.Why)
	}
}

// TestRedteamProxyToPatch: the real proxy's log of the hostile requests,
// read by Read and applied by PatchFile to each layout of each format,
// adds exactly hostileWant to the one server, and changes nothing else.
func TestRedteamProxyToPatch(t *testing.T) {
	log := hostileLog(t, hostileRequests())
	res, err := Read(strings.NewReader(log), Options{})
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	want := append([]string(nil), hostileWant...)
	sort.Strings(want)
	got := res.Entries()
	sort.Strings(got)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("entries %q, want %q", got, want)
	}
	checkPrintable(t, res)
	for _, p := range redteamPolicies {
		patch, err := PatchFile(p.file, []byte(p.src), "s", res.Entries(), "")
		if err != nil {
			t.Errorf("%s: %v\n%s", p.file, err, p.src)
			continue
		}
		checkOnlyAdded(t, p.file, []byte(p.src), patch.New, want)
		noControls(t, "the patch", strings.NewReplacer("\n", " ", "\t", " ").Replace(patch.Diff(p.file))) // the policy holds no control characters: the patch adds none
	}
}

// TestRedteamForgedLines: a log the server can write to (its stderr,
// without --log): forged decisions with every field hostile. They can
// ask for no more than a request could (an exact public host:port); a
// long line, or a line the server left without its newline, hides no
// decision the proxy wrote after it; nothing printed holds a control or
// bidi character.
func TestRedteamForgedLines(t *testing.T) {
	real := hostileLog(t, []string{"CONNECT real.test:443 HTTP/1.1\r\nConnection: close\r\n\r\n"})
	real2 := hostileLog(t, []string{"CONNECT real2.test:8443 HTTP/1.1\r\nConnection: close\r\n\r\n"})
	real3 := hostileLog(t, []string{"GET http://real3.test/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"})
	forged := []string{
		`{"action":"deny","host":"2606:4700::1%\n\"],mounts:[{source:\"/\"}],x:[\"","port":443,"reason":"not in the allowlist"}`,
		`{"action":"deny","host":"2606:4700::1%a","port":443,"reason":"not in the allowlist"}`,
		`{"action":"deny","host":"*.evil.test","port":443,"reason":"not in the allowlist"}`,
		`{"action":"deny","host":"evil.test:443\", \"*.x.test","port":443,"reason":"not in the allowlist"}`,
		`{"action":"deny","host":"169.254.169.254","port":80,"reason":"not in the allowlist"}`,
		`{"action":"deny","host":"::ffff:10.0.0.1","port":80,"reason":"not in the allowlist"}`,
		`{"action":"deny","host":"evil.test","port":70000,"reason":"not in the allowlist"}`,
		`{"action":"deny","host":"evil.test","port":-443,"reason":"not in the allowlist"}`,
		`{"action":"deny","host":"` + strings.Repeat("a", 300) + `.test","port":443,"reason":"not in the allowlist"}`,
		`{"action":"deny","host":"forged.test","port":443,"reason":"not in the allowlist","suggest":"*:443"}`,
		`{"action":"deny","method":"GET\u001b[2J\u001b[1;1Hsuggested: nothing\r","host":"esc.test","port":443,"reason":"not in the allowlist"}`,
		`{"action":"deny","requested":"\u001b]8;;http://x\u0007a\u202egnp.test\u001b[0m","reason":"not a host name: \u001b[31m\u202e","denied":"\u001b[1mx"}`,
		`{"action":"deny","host":"up.test","port":443,"rule":"\u001b[2Kup.test:443\u2066","reason":"cannot resolve: \u009b2J"}`,
		`{"action":"allow","host":"real.test","port":443}`, // a forged allow: allows nothing, hides nothing
	}
	in := strings.Join(forged, "\n") + "\n" +
		strings.Repeat("x", 3<<20) + real + // 3 MiB with no newline, then the proxy's line
		`{"time":"x","action":"deny","host":"hidden.test","port":443,"reason":"not in the allowlist","z":"` + real2 + // an open string
		"junk without a newline " + real3
	res, err := Read(strings.NewReader(in), Options{})
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	got := res.Entries()
	want := []string{"esc.test:443", "forged.test:443", "real.test:443", "real2.test:8443", "real3.test:80"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("entries %q, want %q", got, want)
	}
	checkPrintable(t, res)
	for _, p := range redteamPolicies[:1] {
		patch, err := PatchFile(p.file, []byte(p.src), "s", got, "")
		if err != nil {
			t.Fatal(err)
		}
		checkOnlyAdded(t, p.file, []byte(p.src), patch.New, want)
	}
}

// TestRedteamLongLineIsNotFatal: a line longer than any buffer is
// skipped, not an error that hides the whole log.
func TestRedteamLongLineIsNotFatal(t *testing.T) {
	real := hostileLog(t, []string{"CONNECT real.test:443 HTTP/1.1\r\nConnection: close\r\n\r\n"})
	in := strings.Repeat("y", 5<<20) + "\n" + real
	res, err := Read(strings.NewReader(in), Options{})
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if got := res.Entries(); !reflect.DeepEqual(got, []string{"real.test:443"}) {
		t.Errorf("entries %q", got)
	}
	if res.Other != 1 {
		t.Errorf("other lines: %d, want 1", res.Other)
	}
}

// TestRedteamFloodIsRefused: a server that asks for thousands of
// destinations gets no patch (one no one would review, and that takes
// the CUE evaluator minutes to check), but a quick, clear refusal; a
// patch of MaxEntries is still made.
func TestRedteamFloodIsRefused(t *testing.T) {
	var b strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&b, `{"action":"deny","method":"CONNECT","host":"h%d.flood.test","port":443,"reason":"not in the allowlist"}`+"\n", i)
	}
	start := time.Now()
	res, err := Read(strings.NewReader(b.String()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := redteamPolicies[0]
	if _, err := PatchFile(p.file, []byte(p.src), "s", res.Entries(), ""); err == nil || !strings.Contains(err.Error(), "flooding") {
		t.Errorf("20000 entries: %v", err)
	}
	if _, err := PatchFile(p.file, []byte(p.src), "s", res.Entries()[:MaxEntries], ""); err != nil {
		t.Errorf("%d entries: %v", MaxEntries, err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("took %v", d)
	}
}
