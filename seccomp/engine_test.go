//go:build linux

package seccomp

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"testing"

	moby "github.com/moby/profiles/seccomp"
	"golang.org/x/sys/unix"
)

// TestEngineProfile: engine.json is Docker's default profile as moby's
// package builds it (MCPOLICY_UPDATE=1 rewrites it), and it takes away
// what the engines' own defaults left to a server (the keyring, io_uring,
// AF_VSOCK) and what bwrap's filter denies besides.
func TestEngineProfile(t *testing.T) {
	want, err := json.MarshalIndent(moby.DefaultProfile(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, '\n')
	if os.Getenv("MCPOLICY_UPDATE") == "1" {
		if err := os.WriteFile("engine.json", want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := EngineProfile(); !bytes.Equal(got, want) {
		t.Fatalf("engine.json is not moby's DefaultProfile (MCPOLICY_UPDATE=1 go test -run TestEngineProfile ./seccomp rewrites it)")
	}
	var p moby.Seccomp
	if err := json.Unmarshal(EngineProfile(), &p); err != nil {
		t.Fatal(err)
	}
	if p.DefaultAction != "SCMP_ACT_ERRNO" {
		t.Errorf("default action %s: a syscall the profile does not name must be refused", p.DefaultAction)
	}
	for _, s := range p.Syscalls {
		if s.Action != "SCMP_ACT_ALLOW" {
			continue
		}
		for _, n := range s.Names {
			switch n {
			case "keyctl", "add_key", "request_key", "io_uring_setup", "io_uring_enter", "io_uring_register", "userfaultfd", "open_by_handle_at":
				if len(s.Includes.Caps) == 0 {
					t.Errorf("the profile allows %s", n)
				}
			case "socket":
				for _, a := range s.Args {
					if a.Index == 0 && (a.Op == "SCMP_CMP_EQ" && a.Value == unix.AF_VSOCK || a.Op == "SCMP_CMP_LT" && a.Value > unix.AF_VSOCK) && len(s.Includes.Caps) == 0 {
						t.Errorf("the profile allows socket(AF_VSOCK): %+v", a)
					}
				}
				if len(s.Args) == 0 && len(s.Includes.Caps) == 0 {
					t.Errorf("the profile allows every socket family")
				}
			}
		}
	}
	if !slices.ContainsFunc(p.Syscalls, func(s *moby.Syscall) bool { return slices.Contains(s.Names, "read") && s.Action == "SCMP_ACT_ALLOW" }) {
		t.Error("the profile does not allow read: not a profile")
	}
}
