package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestDiffManifests: two versions of a hand-written Deployment diff in
// grant terms, as two policies do: a read-only hostPath made writable and
// moved up, and hostNetwork added, are widenings at their lines (exit 6).
func TestDiffManifests(t *testing.T) {
	dir := t.TempDir()
	old := `apiVersion: apps/v1
kind: Deployment
metadata: {name: code-index}
spec:
  selector: {matchLabels: {app: code-index}}
  template:
    metadata: {labels: {app: code-index}}
    spec:
      containers:
      - name: code-index
        image: code-index:1.7.2
        volumeMounts:
        - {name: src, mountPath: /workspace, readOnly: true}
      volumes:
      - name: src
        hostPath: {path: /srv/shop}
`
	widened := strings.NewReplacer(", readOnly: true", "", "/srv/shop", "/srv", "    spec:\n      containers:", "    spec:\n      hostNetwork: true\n      containers:").Replace(old)
	writeFile(t, filepath.Join(dir, "old.yaml"), old)
	writeFile(t, filepath.Join(dir, "new.yaml"), widened)
	code, out, errOut := run(t, "diff", filepath.Join(dir, "old.yaml"), filepath.Join(dir, "new.yaml"))
	if code != 6 {
		t.Fatalf("exit %d, want 6\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"new.yaml:9:20: Deployment/code-index WIDENED NETWORK_OPENED", "WIDENED MOUNT_RW: mount /workspace: ro -> rw", "WIDENED MOUNT_MOVED_UP", "exposure 4 -> 15"} {
		if !strings.Contains(out, want) {
			t.Errorf("diff lacks %q:\n%s", want, out)
		}
	}
	if code, out, _ := run(t, "diff", filepath.Join(dir, "old.yaml"), filepath.Join(dir, "old.yaml")); code != 0 || !strings.Contains(out, "no grant changed") {
		t.Errorf("a manifest against itself: exit %d\n%s", code, out)
	}
}
