package seatbelt

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/rogpeppe/go-internal/txtar"
	"mvdan.cc/sh/v3/syntax"
)

func plan(source compiler.HostPath) *compiler.Plan {
	root := compiler.HostPath{Base: compiler.ProjectRoot, Rel: "."}
	return &compiler.Plan{
		Server: "s", Command: []string{"/w/bin/server", "--stdio"}, Workdir: "/w", Hash: "sha256:00",
		User:    compiler.User{UID: 1000, GID: 1000},
		Network: compiler.Network{Mode: "none"},
		Runtime: compiler.Runtime{Name: "node"},
		Mounts: []compiler.Mount{
			{Source: root, Target: "/w", Mode: compiler.ReadWrite},
			{Source: source, Target: "/data", Mode: compiler.ReadOnly},
		},
		Scratch:     &compiler.Scratch{Target: "/tmp", SizeBytes: 1 << 20},
		Accept:      []compiler.Accepted{{Name: AcceptScratchDir}},
		Unprotected: []compiler.Unprotection{{Name: ".vscode"}},
		Env:         []compiler.EnvGrant{{Name: "TOKEN"}},
	}
}

func build(t testing.TB, p *compiler.Plan) (*Profile, string) {
	t.Helper()
	pr, err := Build(p)
	if err != nil {
		t.Fatal(err)
	}
	return pr, string(pr.Text(p))
}

func TestProfileParsesChecksAndRoundTrips(t *testing.T) {
	pr, text := build(t, plan(compiler.HostPath{Base: compiler.Home, Rel: ".cache/x"}))
	forms, err := Parse(text)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	if fs := Check(forms, pr.ParamNames()); len(fs) > 0 {
		t.Errorf("checker findings on our own profile: %v", fs)
	}
	if fs := CheckPlan(forms, pr.ParamNames(), plan(compiler.HostPath{Base: compiler.Home, Rel: ".cache/x"})); len(fs) > 0 {
		t.Errorf("plan checker findings on our own profile: %v", fs)
	}
	if got, want := Rules(forms), Rules(pr.Forms); !reflect.DeepEqual(got, want) {
		t.Errorf("round trip changed the rules:\n%v\n%v", got, want)
	}
	// Protected denies come after every allow: the last match wins.
	rules := Rules(forms)
	lastAllow, firstProtect := -1, len(rules)
	for i, r := range rules {
		if r.Action == "allow" {
			lastAllow = i
		}
		if r.Action == "deny" && strings.Contains(strings.Join(r.Filters, " "), "MOUNT_0") && i < firstProtect {
			firstProtect = i
		}
	}
	if firstProtect < lastAllow {
		t.Errorf("a protected-path deny (rule %d) comes before an allow (rule %d)", firstProtect, lastAllow)
	}
	for _, want := range []string{`(subpath (string-append (param "MOUNT_0") "/.git"))`, `"/.mcp.json"`, `(prefix (string-append (param "MOUNT_0") "/.env"))`,
		`(prefix (string-append (param "MOUNT_0") "/mcpolicy."))`, "(literal (param \"MOUNT_0\"))\n    (path-ancestors (param \"MOUNT_0\"))"} {
		if !strings.Contains(text, want) {
			t.Errorf("profile does not protect %s", want)
		}
	}
	if strings.Contains(text, `"/.vscode"`) {
		t.Errorf("profile protects .vscode, which the plan unprotects")
	}
}

func TestCheckerCatches(t *testing.T) {
	cases := map[string]string{
		"(version 1)\n(allow default)":                                               "(allow default)",
		"(version 1)\n(deny default)\n(allow file-write*)":                           "without a filter",
		"(version 1)\n(deny default)\n(allow network-outbound)":                      "without a filter",
		"(version 1)\n(deny default)\n(allow file-raed* (subpath \"/x\"))":           "unknown operation",
		"(version 1)\n(deny default)\n(allow file-read* (subpath (param \"NOPE\")))": "not defined",
		"(version 1)\n(allow file-read* (subpath \"/x\"))":                           "no (deny default)",
		"(deny default)": "starts with (version 1)",
	}
	for src, want := range cases {
		forms, err := Parse(src)
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		fs := Check(forms, map[string]bool{})
		var all []string
		for _, f := range fs {
			all = append(all, f.String())
		}
		if !strings.Contains(strings.Join(all, "\n"), want) {
			t.Errorf("%q: findings %v, want one saying %q", src, all, want)
		}
	}
	for src, want := range map[string]string{
		"(version 1)\n(deny default":          "2:1: unbalanced",
		"(version 1))":                        "1:12: unbalanced",
		`(allow file-read* (literal "a\qb"))`: "unknown escape",
		`(allow file-read* (literal "ab`:      "unterminated string",
		"#| never closed":                     "unterminated #|",
	} {
		if _, err := Parse(src); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", src, err, want)
		}
	}
}

func TestParserReadsWhatOthersWrite(t *testing.T) {
	src := `;; comment
#| block
comment |#
(version 1)
(deny default (with message "tag"))
(allow file-read* (regex #"^/dev/ttys[0-9]+" #"a\"b"))
(if (string? (param "X")) (allow file-read* (subpath (param "X"))))
(define home (param "HOME"))
(allow file-write* (literal "/tmp/a \"quoted\" \\ path\n"))
`
	forms, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	if got := forms[2].Items[2].Items[2].Text; got != `a"b` {
		t.Errorf("regex with an escaped quote reads as %q", got)
	}
	if got := forms[5].Items[2].Items[1].Text; got != "/tmp/a \"quoted\" \\ path\n" {
		t.Errorf("string escapes read as %q", got)
	}
	again, err := Parse(Format(forms, nil))
	if err != nil || !reflect.DeepEqual(Rules(again), Rules(forms)) {
		t.Errorf("format/parse round trip: %v", err)
	}
}

func TestCanonicalPaths(t *testing.T) {
	for in, want := range map[string]string{
		"/tmp": "/private/tmp", "/tmp/x": "/private/tmp/x", "/var/folders/ab/T": "/private/var/folders/ab/T",
		"/etc/hosts": "/private/etc/hosts", "/tmpfoo": "/tmpfoo", "/Users/dev": "/Users/dev", "/private/tmp": "/private/tmp",
	} {
		if got := Canonical(in); got != want {
			t.Errorf("Canonical(%q) = %q, want %q", in, got, want)
		}
	}
	p := plan(compiler.HostPath{Base: compiler.Absolute, Rel: "/var/folders/x y/T"})
	pr, _ := build(t, p)
	args, err := Args(p, pr, compiler.Placeholders{}, "x.sb")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(args, "\n"), "MOUNT_1=/private/var/folders/x y/T") {
		t.Errorf("args: %q", args)
	}
	sh, err := Wrapper(p, pr, "../..")
	if err != nil || !strings.Contains(string(sh), "MOUNT_1=$(canon '/private/var/folders/x y/T')") {
		t.Errorf("wrapper (%v):\n%s", err, sh)
	}
}

// FuzzPathCannotChangeTheProfile: whatever a host path holds, the profile
// is byte for byte the one a plain path gives (paths are parameters), the
// parameter carries the path unchanged, and the wrapper stays valid shell
// — or the path is refused.
func FuzzPathCannotChangeTheProfile(f *testing.F) {
	for _, s := range []string{"/plain", `/a "quoted" (dir)`, `/back\slash`, "/new\nline", "/paren)(deny default", `/x" (allow default) "`, "/$(rm -rf ~)", "/`id`", "/tmp/it's", "/nul\x00byte"} {
		f.Add(s)
	}
	_, reference := build(f, plan(compiler.HostPath{Base: compiler.Absolute, Rel: "/reference"}))
	f.Fuzz(func(t *testing.T, s string) {
		if !strings.HasPrefix(s, "/") || !utf8.ValidString(s) {
			return
		}
		p := plan(compiler.HostPath{Base: compiler.Absolute, Rel: s})
		pr, text := build(t, p)
		if text != reference {
			t.Fatalf("path %q changed the profile:\n%s", s, text)
		}
		args, err := Args(p, pr, compiler.Placeholders{}, "x.sb")
		sh, werr := Wrapper(p, pr, "../..")
		if strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			if err == nil || werr == nil {
				t.Fatalf("path %q with a control character was not refused", s)
			}
			return
		}
		if werr != nil && strings.Contains(werr.Error(), "cannot quote") {
			return // refused: POSIX sh cannot spell it (e.g. a non-printable rune)
		}
		if err != nil || werr != nil {
			t.Fatalf("path %q: %v / %v", s, err, werr)
		}
		if !strings.Contains(strings.Join(args, "\x00"), "\x00MOUNT_1="+Canonical(s)+"\x00") {
			t.Fatalf("path %q did not arrive as its parameter: %q", s, args)
		}
		if _, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(string(sh)), "w.sh"); err != nil {
			t.Fatalf("path %q made the wrapper invalid shell: %v\n%s", s, err, sh)
		}
	})
}

// TestGoldenProfiles: every .sb in the golden cases parses, passes the
// checker with the parameters its invocation defines, and round-trips.
func TestGoldenProfiles(t *testing.T) {
	files, _ := filepath.Glob("../../golden/testdata/*.txtar")
	n := 0
	for _, file := range files {
		a, err := txtar.ParseFile(file)
		if err != nil {
			t.Fatal(err)
		}
		args := map[string]string{}
		for _, f := range a.Files {
			if strings.HasPrefix(f.Name, "want/out/seatbelt/") && strings.HasSuffix(f.Name, ".json") {
				args[strings.TrimSuffix(f.Name, ".json")] = string(f.Data)
			}
		}
		for _, f := range a.Files {
			if !strings.HasPrefix(f.Name, "want/out/seatbelt/") || !strings.HasSuffix(f.Name, ".sb") {
				continue
			}
			n++
			forms, err := Parse(string(f.Data))
			if err != nil {
				t.Errorf("%s %s: %v", filepath.Base(file), f.Name, err)
				continue
			}
			params := map[string]bool{}
			for _, line := range strings.Split(args[strings.TrimSuffix(f.Name, ".sb")], "\n") {
				if name, _, ok := strings.Cut(strings.Trim(strings.TrimSpace(line), `",`), "="); ok {
					params[name] = true
				}
			}
			if fs := Check(forms, params); len(fs) > 0 {
				t.Errorf("%s %s: %v", filepath.Base(file), f.Name, fs)
			}
			// No path of a machine: only the system's, and parameters.
			for _, form := range forms {
				walk(form, func(n *Node) {
					if n.Kind == String && (strings.Contains(n.Text, "${") || strings.HasPrefix(n.Text, "/Users/") ||
						strings.HasPrefix(n.Text, "/home/") || strings.HasPrefix(n.Text, "/private/var/folders") || strings.HasPrefix(n.Text, "/tmp/")) {
						t.Errorf("%s %s:%d: a host path in the profile: %q", filepath.Base(file), f.Name, n.Line, n.Text)
					}
				})
			}
			again, _ := Parse(Format(forms, nil))
			if !reflect.DeepEqual(Rules(again), Rules(forms)) {
				t.Errorf("%s %s: does not round-trip", filepath.Base(file), f.Name)
			}
		}
	}
	if n == 0 {
		t.Fatal("no golden .sb profiles found")
	}
	_ = os.Stdout
}

func allowlistPlan() *compiler.Plan {
	p := plan(compiler.HostPath{Base: compiler.Home, Rel: ".cache/x"})
	p.Network = compiler.Network{Mode: "allowlist", Allow: compiler.MustDestinations("*.example.com:443", "api.github.com:443"), ProxyPort: 23456}
	return p
}

// TestEgressAllowlist: the profile denies the network, then allows only the
// proxy's port on the host's loopback; it parses, passes the checker (with
// and without the plan) and round-trips; the wrapper exports the proxy.
func TestEgressAllowlist(t *testing.T) {
	p := allowlistPlan()
	pr, text := build(t, p)
	const rule = `(allow network-outbound (remote tcp "localhost:23456"))`
	if strings.Count(text, rule) != 1 {
		t.Fatalf("profile does not hold %s once:\n%s", rule, text)
	}
	if strings.Contains(text, "mDNSResponder") {
		t.Errorf("profile allows DNS; the proxy resolves names")
	}
	forms, err := Parse(text)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	if fs := Check(forms, pr.ParamNames()); len(fs) > 0 {
		t.Errorf("checker findings on our own profile: %v", fs)
	}
	if fs := CheckPlan(forms, pr.ParamNames(), p); len(fs) > 0 {
		t.Errorf("plan checker findings on our own profile: %v", fs)
	}
	if got, want := Rules(forms), Rules(pr.Forms); !reflect.DeepEqual(got, want) {
		t.Errorf("round trip changed the rules:\n%v\n%v", got, want)
	}
	again, err := Parse(Format(forms, nil))
	if err != nil || !reflect.DeepEqual(Rules(again), Rules(forms)) {
		t.Errorf("format/parse round trip: %v", err)
	}
	// The allow comes after the network deny (the last match wins), and it
	// is the only network allow.
	deny, allow := -1, -1
	for i, r := range Rules(forms) {
		switch r.String() {
		case "(deny network* )":
			deny = i
		case rule:
			allow = i
		default:
			if r.Action == "allow" && strings.Contains(strings.Join(r.Ops, " "), "network") {
				t.Errorf("another network allow: %v", r)
			}
		}
	}
	if deny < 0 || allow < deny {
		t.Errorf("network deny at rule %d, proxy allow at rule %d", deny, allow)
	}

	// The same plan with no allowlist: no network allow at all, no socket,
	// and the plan checker refuses the proxy and socket rules in a profile
	// for it.
	none := plan(compiler.HostPath{Base: compiler.Home, Rel: ".cache/x"})
	_, noneText := build(t, none)
	if strings.Contains(noneText, "network-outbound") || strings.Contains(noneText, "system-socket") {
		t.Errorf("network none profile allows outbound or sockets:\n%s", noneText)
	}
	if fs := CheckPlan(forms, pr.ParamNames(), none); len(fs) != 2 || !strings.Contains(fs[0].Msg, "allows no network") || !strings.Contains(fs[1].Msg, "no socket either") {
		t.Errorf("proxy and socket rules under a network none plan: %v", fs)
	}
	other := allowlistPlan()
	other.Network.ProxyPort = 23457
	if fs := CheckPlan(forms, pr.ParamNames(), other); len(fs) != 1 || !strings.Contains(fs[0].Msg, "listens on port 23457") {
		t.Errorf("proxy rule at another port: %v", fs)
	}

	sh, err := Wrapper(p, pr, "../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(string(sh)), "w.sh"); err != nil {
		t.Fatalf("wrapper is not valid shell: %v\n%s", err, sh)
	}
	for _, want := range []string{
		"HTTPS_PROXY=http://127.0.0.1:23456 ", "https_proxy=http://127.0.0.1:23456 ",
		"HTTP_PROXY=http://127.0.0.1:23456 ", "http_proxy=http://127.0.0.1:23456 ",
		"NO_PROXY=localhost,127.0.0.1,::1 ", "no_proxy=localhost,127.0.0.1,::1 \\\n",
		"mcpolicy run --server s --backend seatbelt",
	} {
		if !strings.Contains(string(sh), want) {
			t.Errorf("wrapper lacks %q:\n%s", want, sh)
		}
	}
	// Given after the caller's granted variables: none of them replaces
	// the proxy (env sets the last of a name).
	if strings.Index(string(sh), "HTTPS_PROXY=") < strings.Index(string(sh), "-i "+positional) {
		t.Errorf("proxy variables given before the granted ones:\n%s", sh)
	}
	if sh, _ := Wrapper(none, pr, "../.."); strings.Contains(string(sh), "PROXY") {
		t.Errorf("network none wrapper sets a proxy:\n%s", sh)
	}

	for _, r := range Enforcement(p) {
		if r.Restriction == "egress allowlist" && (r.Support != "yes" || !strings.Contains(r.How, `"localhost:23456"`)) {
			t.Errorf("enforcement row: %+v", r)
		}
	}
}

// TestCheckerNetwork: the proxy rule passes; every other way out fails.
func TestCheckerNetwork(t *testing.T) {
	const head = "(version 1)\n(deny default)\n(deny network*)\n"
	ok := []string{
		`(allow network-outbound (remote tcp "localhost:23456"))`,
		`(allow network-outbound (with report) (remote tcp "localhost:1"))`,
	}
	for _, src := range ok {
		forms, err := Parse(head + src)
		if err != nil {
			t.Fatal(err)
		}
		if fs := Check(forms, nil); len(fs) > 0 {
			t.Errorf("%s: %v", src, fs)
		}
	}
	bad := map[string]string{
		`(allow network-outbound)`:                                                             "without a filter",
		`(allow network*)`:                                                                     "without a filter",
		`(allow network-outbound (remote tcp "*:*"))`:                                          `"*:*": the only destination`,
		`(allow network-outbound (remote ip "*:443"))`:                                         `"*:443": the only destination`,
		`(allow network-outbound (remote tcp "example.com:443"))`:                              "the only destination",
		`(allow network-outbound (remote tcp "127.0.0.1:23456"))`:                              "the only destination",
		`(allow network-outbound (remote tcp "localhost:*"))`:                                  "every port",
		`(allow network-outbound (remote tcp "localhost:0"))`:                                  "not a number",
		`(allow network-outbound (remote tcp "localhost:99999"))`:                              "not a number",
		`(allow network-outbound (remote tcp "localhost"))`:                                    "the only destination",
		`(allow network-outbound (remote ip "localhost:23456"))`:                               "admits UDP",
		`(allow network-outbound (remote udp "localhost:23456"))`:                              "more than the egress proxy",
		`(allow network-outbound (remote unix-socket (path-literal "/var/run/docker.sock")))`:  "more than the egress proxy",
		`(allow network-outbound (literal "/private/var/run/mDNSResponder"))`:                  "more than the egress proxy",
		`(allow network* (remote tcp "localhost:23456"))`:                                      "the only network allow",
		`(allow network-outbound signal (remote tcp "localhost:23456"))`:                       "the only network allow",
		`(allow network-bind (local ip "localhost:*"))`:                                        "listens on the host's network",
		`(allow network-inbound (local tcp "*:8080"))`:                                         "any local process or web page can connect in",
		`(allow network-outbound (remote tcp "localhost:1") (remote tcp "*:*"))`:               "write one",
		`(allow network-outbound (require-any (remote tcp "localhost:1") (remote tcp "*:*")))`: "more than the egress proxy",
	}
	for src, want := range bad {
		forms, err := Parse(head + src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		var errs []string
		for _, f := range Check(forms, nil) {
			if f.Severity == "error" {
				errs = append(errs, f.String())
			}
		}
		if len(errs) != 1 || !strings.Contains(errs[0], want) {
			t.Errorf("%s: errors %q, want one saying %q", src, errs, want)
		}
	}
	// An address the checker cannot read: a warning alone, an error
	// against a plan.
	forms, _ := Parse(head + `(allow network-outbound (remote ip (param "PROXY")))`)
	if fs := Check(forms, nil); len(fs) != 1 || fs[0].Severity != "warning" {
		t.Errorf("param address: %v", fs)
	}
	if fs := CheckPlan(forms, nil, allowlistPlan()); len(fs) != 1 || fs[0].Severity != "error" {
		t.Errorf("param address against a plan: %v", fs)
	}
	// Against a plan, listening is refused too: the profile is ours.
	forms, _ = Parse(head + `(allow network-bind (local ip "localhost:*"))`)
	if fs := CheckPlan(forms, nil, allowlistPlan()); len(fs) != 1 || fs[0].Severity != "error" {
		t.Errorf("network-bind against a plan: %v", fs)
	}
}
