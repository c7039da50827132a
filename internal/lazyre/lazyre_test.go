package lazyre

import "testing"

func TestCompiledOnFirstUse(t *testing.T) {
	r := New(`^a+(b)$`)
	if r.re != nil {
		t.Fatal("compiled before first use")
	}
	if m := r.FindStringSubmatch("aab"); len(m) != 2 || m[1] != "b" {
		t.Errorf("FindStringSubmatch: %q", m)
	}
	bad := New(`(`)
	defer func() {
		if recover() == nil {
			t.Error("CompileAll let an invalid pattern through")
		}
		mu.Lock()
		all = all[:len(all)-1]
		mu.Unlock()
		_ = bad
	}()
	CompileAll()
}
