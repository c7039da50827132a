package supervise

import (
	"debug/elf"
	"fmt"
)

// CheckStatic refuses a dynamically linked executable: inside a sandbox
// its loader and libraries may not be there.
func CheckStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked and cannot run inside the sandbox as the egress forwarder: build mcpolicy with CGO_ENABLED=0 (or pass --self a static build)", path)
		}
	}
	return nil
}
