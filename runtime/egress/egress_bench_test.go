package egress

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/internal/allowlist"
	"github.com/mcpolicy/mcpolicy/internal/credential"
	"github.com/mcpolicy/mcpolicy/runtime/egress/forwarder"
)

// forwarderEnv makes this test binary the in-sandbox forwarder (TestMain):
// its value is the proxy's socket; it prints the loopback port it took.
const forwarderEnv = "MCPOLICY_TEST_FORWARDER"

func TestMain(m *testing.M) {
	if socket := os.Getenv(forwarderEnv); socket != "" {
		ln, err := forwarder.Listen(0)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(ln.Addr().(*net.TCPAddr).Port)
		go func() { io.Copy(io.Discard, os.Stdin); os.Exit(0) }() // the benchmark is gone
		forwarder.Forward(ln, socket)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// bulkSize is what op=bulk carries over one connection.
const bulkSize = 64 << 20

// BenchmarkEgress times the egress path side by side with a direct socket,
// for benchstat -col /path:
//
//	path=direct     the upstream over loopback
//	path=floor      CONNECT through the least a CONNECT proxy does (floorRelay:
//	                read the request's head, dial, answer 200, copy both
//	                ways; no policy, no log): what any proxy costs
//	path=proxy      CONNECT through the proxy on a loopback port
//	path=forwarder  as mcpolicy run wires it: a loopback port, the forwarder
//	                (this binary in a process of its own), the proxy's unix
//	                socket with the peer check, the upstream
//
// op=connect-echo is a new connection and its first 1-byte round trip;
// op=bulk 64 MiB down one connection (upstream to client), op=bulk-up the
// same up.
//
// op=https-get is an HTTPS GET with a bearer token and a 1 KiB answer on
// a kept-alive connection, op=https-connect the same on a new connection
// (its TLS handshake included), for paths direct, proxy (a tunnel: TLS
// end to end) and
//
//	path=intercept  a credential bound to the upstream: the proxy ends the
//	                client's TLS with its session CA's certificate, puts
//	                the value in, redacts the answer, and speaks TLS to
//	                the upstream itself
func BenchmarkEgress(b *testing.B) {
	echo := upstream(b, func(c net.Conn) {
		buf := make([]byte, 512)
		for {
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			if _, err := c.Write(buf[:n]); err != nil {
				return
			}
		}
	})
	chunk := make([]byte, 256<<10)
	down := upstream(b, func(c net.Conn) {
		for n := 0; n < bulkSize; n += len(chunk) {
			if _, err := c.Write(chunk); err != nil {
				return
			}
		}
	})
	up := upstream(b, func(c net.Conn) {
		n, _ := io.Copy(io.Discard, c)
		fmt.Fprintf(c, "%d\n", n)
	})
	allow, err := allowlist.Parse([]string{echo, down, up})
	if err != nil {
		b.Fatal(err)
	}
	p := &Proxy{Allow: allow, Log: io.Discard}
	b.Cleanup(p.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go p.Serve(ln)
	fwd, fwdPID := startForwarder(b, p)
	floor := floorRelay(b)

	paths := []struct {
		name string
		dial func(target string) (net.Conn, error)
	}{
		{"direct", func(target string) (net.Conn, error) { return net.Dial("tcp", target) }},
		{"floor", func(target string) (net.Conn, error) { return connect(floor, target) }},
		{"proxy", func(target string) (net.Conn, error) { return connect(ln.Addr().String(), target) }},
		{"forwarder", func(target string) (net.Conn, error) { return connect(fwd, target) }},
	}
	for _, path := range paths {
		b.Run("op=connect-echo/path="+path.name, func(b *testing.B) {
			one := []byte{'x'}
			defer reportCPU(b, fwdPID)()
			for b.Loop() {
				c, err := path.dial(echo)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := c.Write(one); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c, one); err != nil {
					b.Fatal(err)
				}
				c.Close()
			}
		})
	}
	for _, path := range paths {
		b.Run("op=bulk/path="+path.name, func(b *testing.B) {
			buf := make([]byte, 256<<10)
			b.SetBytes(bulkSize)
			for b.Loop() {
				c, err := path.dial(down)
				if err != nil {
					b.Fatal(err)
				}
				n, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{c}, buf)
				c.Close()
				if err != nil || n != bulkSize {
					b.Fatalf("%d bytes, %v", n, err)
				}
			}
		})
	}
	for _, path := range paths {
		b.Run("op=bulk-up/path="+path.name, func(b *testing.B) {
			b.SetBytes(bulkSize)
			for b.Loop() {
				c, err := path.dial(up)
				if err != nil {
					b.Fatal(err)
				}
				for n := 0; n < bulkSize; n += len(chunk) {
					if _, err := c.Write(chunk); err != nil {
						b.Fatal(err)
					}
				}
				c.(interface{ CloseWrite() error }).CloseWrite()
				got, err := io.ReadAll(c)
				c.Close()
				if err != nil || string(got) != strconv.Itoa(bulkSize)+"\n" {
					b.Fatalf("%q, %v", got, err)
				}
			}
		})
	}
	benchHTTPS(b)
}

// benchHTTPS is BenchmarkEgress's https ops: a TLS upstream allowed to
// both proxies, bound to a credential on the second.
func benchHTTPS(b *testing.B) {
	page := bytes.Repeat([]byte("x"), 1024)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" {
			w.WriteHeader(http.StatusUnauthorized)
		}
		w.Write(page)
	}))
	b.Cleanup(srv.Close)
	target := srv.Listener.Addr().String()
	allow, err := allowlist.Parse([]string{target})
	if err != nil {
		b.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	const value, placeholder = "ghp_R3alT0kenValue0123456789abcdefABCD", "ghp_Pl4ceh0lderXyz9876543210zyxwvuZYXW"
	tunnel := &Proxy{Allow: allow, Log: io.Discard}
	icept := &Proxy{Allow: allow, Log: io.Discard, UpstreamRoots: roots, Credentials: []Credential{{
		Grant: credential.Grant{Name: "GITHUB_TOKEN", To: []string{target}, As: credential.Injection{Header: "Authorization", Format: "Bearer {}"}},
		Value: value, Placeholder: placeholder}}}
	ca, err := icept.CACert()
	if err != nil {
		b.Fatal(err)
	}
	trust := x509.NewCertPool()
	trust.AddCert(srv.Certificate())
	trust.AppendCertsFromPEM(ca)
	client := func(proxy *Proxy, keepAlive bool) *http.Client {
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: trust}, DisableKeepAlives: !keepAlive}
		if proxy != nil {
			b.Cleanup(proxy.Close)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			go proxy.Serve(ln)
			tr.Proxy = http.ProxyURL(&url.URL{Scheme: "http", Host: ln.Addr().String()})
		}
		b.Cleanup(tr.CloseIdleConnections)
		return &http.Client{Transport: tr}
	}
	paths := []struct {
		name  string
		proxy *Proxy
	}{{"direct", nil}, {"proxy", tunnel}, {"intercept", icept}}
	for _, op := range []string{"https-get", "https-connect"} {
		for _, path := range paths {
			c := client(path.proxy, op == "https-get")
			b.Run("op="+op+"/path="+path.name, func(b *testing.B) {
				for b.Loop() {
					req, _ := http.NewRequest("GET", "https://"+target+"/", nil)
					req.Header.Set("Authorization", "Bearer "+placeholder)
					resp, err := c.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					got, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 || !bytes.Equal(got, page) {
						b.Fatalf("%s, %d bytes: %.40q", resp.Status, len(got), got)
					}
				}
			})
		}
	}
}

// upstream serves each connection with serve on a loopback port and
// returns its address.
func upstream(b *testing.B, serve func(net.Conn)) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// floorRelay serves, on a loopback port, the least a CONNECT proxy does:
// it reads the request's head, dials the target of its first line,
// answers 200 and copies both ways, and returns its address.
func floorRelay(b *testing.B) string {
	return upstream(b, func(c net.Conn) {
		br := bufio.NewReader(c)
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		for {
			l, err := br.ReadSlice('\n')
			if err != nil {
				return
			}
			if len(bytes.TrimSpace(l)) == 0 {
				break
			}
		}
		f := strings.Fields(line)
		if len(f) != 3 || f[0] != "CONNECT" {
			return
		}
		up, err := net.Dial("tcp", f[1])
		if err != nil {
			return
		}
		defer up.Close()
		if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			return
		}
		done := make(chan struct{})
		go func() {
			io.Copy(up, br) // what came past the head, then the rest
			up.(*net.TCPConn).CloseWrite()
			close(done)
		}()
		io.Copy(c, up)
		c.(*net.TCPConn).CloseWrite()
		<-done
	})
}

// reportCPU, deferred around a benchmark's loop, reports the processor
// time (user and system) the whole chain spent per operation, cpu-ns/op:
// this process (client, proxy, relays, upstreams) and the forwarder's.
// Unlike the time per operation it hardly moves when other jobs load the
// machine. The forwarder's is read from /proc in clock ticks (100 a
// second), so it counts over a long loop only.
func reportCPU(b *testing.B, fwdPID int) func() {
	cpu := func() time.Duration {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		t := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		if st, err := os.ReadFile("/proc/" + strconv.Itoa(fwdPID) + "/stat"); err == nil {
			if i := bytes.LastIndexByte(st, ')'); i >= 0 {
				if f := strings.Fields(string(st[i+1:])); len(f) > 12 {
					ut, _ := strconv.ParseInt(f[11], 10, 64)
					sy, _ := strconv.ParseInt(f[12], 10, 64)
					t += time.Duration(ut+sy) * 10 * time.Millisecond
				}
			}
		}
		return t
	}
	start := cpu()
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64(cpu()-start)/float64(b.N), "cpu-ns/op")
		}
	}
}

// startForwarder serves p on a unix socket guarded as mcpolicy run guards it
// (the peer check: the forwarder's process descends from this one), starts
// this binary as the forwarder to it, and returns the forwarder's address
// and pid.
func startForwarder(b *testing.B, p *Proxy) (string, int) {
	sock := filepath.Join(b.TempDir(), "egress.sock")
	uln, err := net.Listen("unix", sock)
	if err != nil {
		b.Fatal(err)
	}
	me, uid := os.Getpid(), os.Geteuid()
	go p.Serve(p.Guard(uln, func(c net.Conn) error {
		_, err := CheckPeer(c, me, uid)
		return err
	}))
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), forwarderEnv+"="+sock)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		b.Fatalf("the forwarder: %v", err)
	}
	return "127.0.0.1:" + strings.TrimSpace(line), cmd.Process.Pid
}

// connect opens a tunnel to target through the proxy at addr, as a
// client does: CONNECT, then the answer's header; what came with it past
// its blank line is the tunnel's.
func connect(addr, target string) (net.Conn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	if _, err := fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target); err != nil {
		c.Close()
		return nil, err
	}
	buf := make([]byte, 4096)
	n, end := 0, -1
	for end < 0 {
		if n == len(buf) {
			c.Close()
			return nil, errors.New("CONNECT: the answer's header is too long")
		}
		m, err := c.Read(buf[n:])
		if err != nil {
			c.Close()
			return nil, err
		}
		n += m
		end = bytes.Index(buf[:n], []byte("\r\n\r\n"))
	}
	if !bytes.HasPrefix(buf, []byte("HTTP/1.1 200 ")) {
		c.Close()
		return nil, errors.New("CONNECT: " + strings.SplitN(string(buf[:n]), "\r\n", 2)[0])
	}
	return &tunnel{TCPConn: c.(*net.TCPConn), rest: buf[end+4 : n]}, nil
}

// tunnel is a connection through the proxy, with what was read past the
// proxy's answer.
type tunnel struct {
	*net.TCPConn
	rest []byte
}

func (t *tunnel) Read(b []byte) (int, error) {
	if len(t.rest) > 0 {
		n := copy(b, t.rest)
		t.rest = t.rest[n:]
		return n, nil
	}
	return t.TCPConn.Read(b)
}
