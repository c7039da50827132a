package schema

// Red-team regressions for fitsPlain / decodePlain (commit 760b123).
//
// CUE's compiler NFC-normalises string labels (internal/core/compile/label.go:
// index.StringToIndex(norm.NFC.String(s))); identifier labels are not
// normalised. plainFields (and so decodePlain and fitsPlain) compares the
// unquoted bytes, and duplicateServers uses ast.LabelName (strconv.Unquote,
// no NFC). Two server labels that differ in bytes but are one label to CUE
// are two servers to the fast path and one (unified) server to CUE.

import (
	"path/filepath"
	"strings"
	"testing"
)

var redteamNFC = map[string]string{
	// fitsPlain accepts, CUE refuses: conflicting values "y" and "x".
	"nfc-conflict.cue":     "version: \"v1\"\nservers: {\"é\": {command: [\"x\"]}, \"e\\u0301\": {command: [\"y\"]}}\n",
	"nfc-conflict.json":    `{"version": "v1", "servers": {"é": {"command": ["x"]}, "e\u0301": {"command": ["y"]}}}`,
	"nfc-conflict.yaml":    "version: v1\nservers:\n  \"é\": {command: [x]}\n  \"e\\u0301\": {command: [y]}\n",
	"kelvin-conflict.cue":  "version: \"v1\"\nservers: {K: {command: [\"x\"]}, \"\\u212a\": {command: [\"y\"]}}\n",
	"kelvin-conflict2.cue": "version: \"v1\"\nservers: {\"K\": {image: \"a\"}, \"\\u212a\": {image: \"b\"}}\n",
	// CUE accepts, but the policies differ: one merged server (CUE) against
	// two (fast path), the network grant on a second server of the same name.
	"nfc-merge.cue": "version: \"v1\"\nservers: {\"é\": {command: [\"x\"]}, \"e\\u0301\": {network: allow: [\"h:1\"]}}\n",
	// One server; its name is NFC through CUE, as written through Go.
	"nfc-name.cue":  "version: \"v1\"\nservers: {\"e\\u0301\": {command: [\"x\"]}}\n",
	"nfc-name.json": `{"version": "v1", "servers": {"e\u0301": {"command": ["x"]}}}`,
	"nfc-name.yaml": "version: v1\nservers:\n  \"e\\u0301\": {command: [x]}\n",
	"angstrom.cue":  "version: \"v1\"\nservers: {\"\\u212b\": {command: [\"x\"]}}\n",
}

// TestRedteamPlainNFC: every path loads these the same (checkAgree also
// fails when fitsPlain accepts what CUE refuses).
func TestRedteamPlainNFC(t *testing.T) {
	dir := t.TempDir()
	for name, src := range redteamNFC {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(dir, "mcpolicy"+filepath.Ext(name))
			_, decls, ok := parsePlain(file, []byte(src))
			_, cueErr := loadBytes(file, []byte(src), dir, throughCUE)
			t.Logf("parsePlain=%v fitsPlain=%v CUE: %v", ok, ok && fitsPlain(decls), cueErr)
			checkAgree(t, dir, "mcpolicy"+filepath.Ext(name), []byte(src))
		})
	}
}

// TestRedteamDuplicateServerSpellings: not fitsPlain (decodePlain sees the
// duplicate and falls back to CUE), but the full path's duplicateServers
// uses ast.LabelName (strconv.Unquote), which cannot read a raw label or a
// "\/" escape, and does not normalise: the two declarations are unified
// silently instead of "server declared twice".
func TestRedteamDuplicateServerSpellings(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{
		"raw.cue":    "version: \"v1\"\nservers: {a: {command: [\"x\"]}, #\"a\"#: {network: allow: [\"h:1\"]}}\n",
		"slash.cue":  "version: \"v1\"\nservers: {\"/a\": {command: [\"x\"]}, \"\\/a\": {network: allow: [\"h:1\"]}}\n",
		"slash.json": `{"version": "v1", "servers": {"/a": {"command": ["x"]}, "\/a": {"network": {"allow": ["h:1"]}}}}`,
		"nfc.cue":    redteamNFC["nfc-merge.cue"],
	} {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(dir, "mcpolicy"+filepath.Ext(name))
			for _, through := range []loadPath{throughCUE, throughPlainCUE, throughGo} {
				p, err := loadBytes(file, []byte(src), dir, through)
				if err == nil || !strings.Contains(err.Error(), "declared twice") {
					n := 0
					if p != nil {
						n = len(p.Servers)
					}
					t.Errorf("path %d: no \"declared twice\" error (err %v, %d servers)\nsrc:\n%s", through, err, n, src)
				}
			}
		})
	}
}

// TestRedteamServersSpelledRaw: the servers field spelled as a raw or
// escaped string is found for the duplicate check too.
func TestRedteamServersSpelledRaw(t *testing.T) {
	dir := t.TempDir()
	src := "version: \"v1\"\n#\"servers\"#: {a: {command: [\"x\"]}, \"\\u0061\": {network: allow: [\"h:1\"]}}\n"
	for _, through := range []loadPath{throughCUE, throughPlainCUE, throughGo} {
		if _, err := loadBytes(filepath.Join(dir, "mcpolicy.cue"), []byte(src), dir, through); err == nil || !strings.Contains(err.Error(), "declared twice") {
			t.Errorf("path %d: %v, want the server declared twice", through, err)
		}
	}
}
