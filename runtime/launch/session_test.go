package launch_test

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/writereport"
	"github.com/mcpolicy/mcpolicy/runtime/launch"
)

// TestWritable: only the read-write binds are a session's grants.
func TestWritable(t *testing.T) {
	spec := &artefact.BwrapSpec{Args: []string{"--ro-bind", "${PROJECT_ROOT}", "/w", "--bind", "${PROJECT_ROOT}/data", "/d", "--bind", "${HOME}/.cache/x", "/c", "--setenv", "A", "--bind", "--", "--bind", "/no", "/no"}}
	if got, want := launch.BwrapWritable(spec, "/p", "/h"), []string{"/p/data", "/h/.cache/x"}; !reflect.DeepEqual(got, want) {
		t.Errorf("BwrapWritable = %q, want %q", got, want)
	}
	args := []string{"--mount", "type=bind,source=/p,target=/w,readonly", "--mount", "type=bind,source=/p/data,target=/d", "--label", "org.mcpolicy.plan=srv"}
	if got, want := launch.EngineWritable(args), []string{"/p/data"}; !reflect.DeepEqual(got, want) {
		t.Errorf("EngineWritable = %q, want %q", got, want)
	}
	if got := launch.EngineServer(args); got != "srv" {
		t.Errorf("EngineServer = %q", got)
	}
}

// TestRecordSession: recorded under $XDG_STATE_HOME; refused inside a
// grant; nothing (and a word with -v) without HOME.
func TestRecordSession(t *testing.T) {
	base := t.TempDir()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	var say, stderr bytes.Buffer
	rec, err := launch.RecordSession(writereport.Session{Project: base + "/p", Writable: []string{base + "/p"}}, env(map[string]string{"XDG_STATE_HOME": base + "/st"}), &say, &stderr)
	if err != nil || rec == nil {
		t.Fatalf("RecordSession: %v", err)
	}
	rec.End()
	if m, _ := filepath.Glob(base + "/st/mcpolicy/sessions/*/*.end"); len(m) != 1 {
		t.Errorf("no end mark: %v", m)
	}
	if _, err := launch.RecordSession(writereport.Session{Project: base + "/p", Writable: []string{base}}, env(map[string]string{"HOME": base + "/home"}), nil, &stderr); err == nil || !strings.Contains(err.Error(), "XDG_STATE_HOME") {
		t.Errorf("state inside a grant: %v", err)
	}
	say.Reset()
	if rec, err := launch.RecordSession(writereport.Session{Project: "/p"}, env(nil), &say, &stderr); rec != nil || err != nil || !strings.Contains(say.String(), "not recorded") {
		t.Errorf("no HOME: %v %v %q", rec, err, say.String())
	}
	ro := filepath.Join(base, "ro")
	os.Mkdir(ro, 0o500)
	if os.Getuid() != 0 {
		if rec, err := launch.RecordSession(writereport.Session{Project: "/p"}, env(map[string]string{"XDG_STATE_HOME": ro}), nil, &stderr); rec != nil || err != nil || !strings.Contains(stderr.String(), "not recorded") {
			t.Errorf("unwritable state: %v %v %q", rec, err, stderr.String())
		}
	}
}

// TestRecordSessionBacklog: more unsettled sessions than are kept is
// said on stderr: none is pruned before a review.
func TestRecordSessionBacklog(t *testing.T) {
	base := t.TempDir()
	getenv := func(k string) string {
		if k == "XDG_STATE_HOME" {
			return base + "/st"
		}
		return ""
	}
	var stderr bytes.Buffer
	for i := 0; i <= writereport.Keep; i++ {
		stderr.Reset()
		if _, err := launch.RecordSession(writereport.Session{Project: base + "/p"}, getenv, nil, &stderr); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(stderr.String(), "101 sessions of "+base+"/p await review") {
		t.Errorf("stderr %q", stderr.String())
	}
}
