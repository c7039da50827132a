package golden

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
)

// TestArtefactsKeepTheContract reads every artefact the golden builds
// hold, as the launcher will, against internal/artefact's tables: each
// engine `run` flag and each bwrap option is one the contract names, with
// the values it says. The emitters and the launcher share those tables and
// nothing else, so an emitter writing a flag the launcher does not know
// fails here, not at a user's spawn.
func TestArtefactsKeepTheContract(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txtar")
	if err != nil {
		t.Fatal(err)
	}
	var engines, specs int
	for _, f := range files {
		ar, err := txtar.ParseFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, file := range ar.Files {
			name := strings.TrimPrefix(file.Name, wantPrefix+"out/")
			where := filepath.Base(f) + ": " + file.Name
			switch {
			case strings.HasPrefix(name, "docker/") && strings.HasSuffix(name, ".json") && !strings.HasSuffix(name, ".egress.json"):
				var args []string
				if err := json.Unmarshal(file.Data, &args); err != nil {
					t.Errorf("%s: %v", where, err)
					continue
				}
				engines++
				checkEngineArgs(t, where, args)
			case strings.HasPrefix(name, "bwrap/") && strings.HasSuffix(name, ".json"):
				var spec artefact.BwrapSpec
				if err := json.Unmarshal(file.Data, &spec); err != nil {
					t.Errorf("%s: %v", where, err)
					continue
				}
				specs++
				checkBwrapArgs(t, where, spec.Args)
			}
		}
	}
	if engines == 0 || specs == 0 {
		t.Fatalf("the goldens hold %d engine artefacts and %d bwrap specs: the test reads nothing", engines, specs)
	}
}

func checkEngineArgs(t *testing.T, where string, args []string) {
	if len(args) == 0 || args[0] != "run" {
		t.Errorf("%s: an engine artefact starts with run: %q", where, args)
		return
	}
	for i := 1; i < len(args) && strings.HasPrefix(args[i], "-"); i++ {
		n, ok := artefact.EngineOperands(args[i])
		if !ok || i+n >= len(args) {
			t.Errorf("%s: %q is not a flag of the contract's (artefact.EngineOperands), or lacks its value: the launcher would refuse it", where, args[i])
			return
		}
		if args[i] == "--mount" {
			if _, err := artefact.ParseMount(args[i+1]); err != nil {
				t.Errorf("%s: %v", where, err)
			}
		}
		i += n
	}
}

func checkBwrapArgs(t *testing.T, where string, args []string) {
	for i := 0; i < len(args) && args[i] != "--"; i++ {
		n, ok := artefact.BwrapOperands(args[i])
		if !ok || i+n >= len(args) {
			t.Errorf("%s: %q is not an option of the contract's (artefact.BwrapOperands), or lacks its values: the launcher would refuse it", where, args[i])
			return
		}
		i += n
	}
}
