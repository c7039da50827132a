// Package lazyre holds regular expressions compiled on first use.
//
// mcpolicy is a short-lived process: compiling every lint and secret
// pattern at init cost each command about 2 ms (a third of `build`'s own
// work on a small policy) whether it lints or not.
package lazyre

import (
	"regexp"
	"sync"
)

// RE is a regexp.Regexp compiled the first time it is used.
type RE struct {
	src  string
	once sync.Once
	re   *regexp.Regexp
}

var (
	mu  sync.Mutex
	all []*RE
)

// New records src; it is compiled, and panics if invalid, on first use
// or by CompileAll, which each package's tests call.
func New(src string) *RE {
	r := &RE{src: src}
	mu.Lock()
	all = append(all, r)
	mu.Unlock()
	return r
}

// CompileAll compiles every pattern created so far: a test calls it so
// that an invalid pattern fails the test run, not a user's command.
func CompileAll() {
	mu.Lock()
	rs := append([]*RE{}, all...)
	mu.Unlock()
	for _, r := range rs {
		r.Regexp()
	}
}

// Regexp is the compiled expression.
func (r *RE) Regexp() *regexp.Regexp {
	r.once.Do(func() { r.re = regexp.MustCompile(r.src) })
	return r.re
}

func (r *RE) String() string                             { return r.src }
func (r *RE) MatchString(s string) bool                  { return r.Regexp().MatchString(s) }
func (r *RE) Match(b []byte) bool                        { return r.Regexp().Match(b) }
func (r *RE) FindString(s string) string                 { return r.Regexp().FindString(s) }
func (r *RE) FindStringIndex(s string) []int             { return r.Regexp().FindStringIndex(s) }
func (r *RE) FindStringSubmatch(s string) []string       { return r.Regexp().FindStringSubmatch(s) }
func (r *RE) FindStringSubmatchIndex(s string) []int     { return r.Regexp().FindStringSubmatchIndex(s) }
func (r *RE) FindAllString(s string, n int) []string     { return r.Regexp().FindAllString(s, n) }
func (r *RE) FindAllStringIndex(s string, n int) [][]int { return r.Regexp().FindAllStringIndex(s, n) }
func (r *RE) FindAllStringSubmatch(s string, n int) [][]string {
	return r.Regexp().FindAllStringSubmatch(s, n)
}
func (r *RE) FindAllStringSubmatchIndex(s string, n int) [][]int {
	return r.Regexp().FindAllStringSubmatchIndex(s, n)
}
func (r *RE) ReplaceAllString(src, repl string) string { return r.Regexp().ReplaceAllString(src, repl) }
func (r *RE) Split(s string, n int) []string           { return r.Regexp().Split(s, n) }
func (r *RE) SubexpIndex(name string) int              { return r.Regexp().SubexpIndex(name) }
func (r *RE) FindSubmatch(b []byte) [][]byte           { return r.Regexp().FindSubmatch(b) }
