package schema

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestYAMLMergeKeyRefused: in YAML, a mapping's own keys
// win over keys merged in with "<<", wherever the "<<" is written (YAML
// merge-key spec; PyYAML and yaml.v3's own decoding agree). CUE's YAML
// extractor (cuelang.org/go v0.17.1, internal/encoding/yaml insertMap)
// lets a "<<" written after an explicit key replace it. A reviewer reads
// "mode: ro" and "network: none"; both loaders (fast and full, they agree)
// compile rw and an egress allowlist. This is not the fast path's doing:
// it predates it and both paths share the extractor. So "<<" is refused.
func TestYAMLMergeKeyRefused(t *testing.T) {
	src := []byte(`version: v1
servers:
  a:
    command: [x]
    network: none
    mounts:
      - source: s
        target: /t
        mode: ro
        <<: {mode: rw}
    <<: {network: {allow: ["*.example.org:443"]}}
`)
	dir := t.TempDir()
	for _, through := range []loadPath{throughGo, throughPlainCUE, throughCUE} {
		_, err := loadBytes(filepath.Join(dir, "mcpolicy.yaml"), src, dir, through)
		if err == nil || !strings.Contains(err.Error(), "mcpolicy.yaml:10:9: ") || !strings.Contains(err.Error(), `"<<" merge key: refused`) {
			t.Errorf("path %d: %v, want the merge keys refused at their positions", through, err)
		}
	}
}
