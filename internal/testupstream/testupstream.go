// Package testupstream is, for tests, a stand-in upstream that keeps
// every request it received and reflects it: the host a credential is
// bound to, reflecting the value back if it had it, and the other hosts
// a hostile server sends its placeholder to (the credential tests of
// runtime/supervise, verify/e2e and emit/kubernetes).
package testupstream

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// Recorder keeps each request (method, target, headers, body) and
// answers with all of it: in the body, in pieces of 5 bytes (so a
// reflected value spans reads), and in the header X-Echo.
type Recorder struct {
	mu   sync.Mutex
	got  bytes.Buffer
	auth []string
}

func (rc *Recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var req bytes.Buffer
	fmt.Fprintf(&req, "%s %s\n", r.Method, r.URL.RequestURI())
	r.Header.Write(&req)
	req.Write(body)
	rc.mu.Lock()
	rc.got.Write(req.Bytes())
	rc.auth = append(rc.auth, r.Header.Get("Authorization"))
	rc.mu.Unlock()
	w.Header().Set("X-Echo", strings.ReplaceAll(req.String(), "\n", " | "))
	for b := req.Bytes(); len(b) > 0; {
		n := min(5, len(b))
		w.Write(b[:n])
		w.(http.Flusher).Flush()
		b = b[n:]
	}
}

// Received is every request received, as reflected, and each one's
// Authorization header in order.
func (rc *Recorder) Received() (string, []string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.got.String(), slices.Clone(rc.auth)
}

// Reset forgets what was received: for the next run against the same
// upstream.
func (rc *Recorder) Reset() {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.got.Reset()
	rc.auth = nil
}
