package cli

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/findings"
	"github.com/mcpolicy/mcpolicy/internal/findings/sariftest"
	"github.com/mcpolicy/mcpolicy/internal/testbin"
	"sigs.k8s.io/yaml"
)

// The repository's GitHub Action (action.yml, a composite action) is run
// here the way a runner runs it: each step's run: script with bash
// --noprofile --norc -eo pipefail, in the repository's checkout, its env:
// evaluated from the inputs and the earlier steps' outputs, with the
// runner's files (GITHUB_OUTPUT, GITHUB_PATH, GITHUB_STEP_SUMMARY) and
// variables (RUNNER_TEMP, RUNNER_OS, RUNNER_ARCH, GITHUB_BASE_REF). A
// uses: step (the upload to code scanning) is not run: its inputs are
// evaluated and checked instead. The expressions the evaluator knows are
// the ones the action may use; any other fails the test.

type actionFile struct {
	Inputs map[string]struct {
		Default string `json:"default"`
	} `json:"inputs"`
	Runs struct {
		Using string       `json:"using"`
		Steps []actionStep `json:"steps"`
	} `json:"runs"`
}

type actionStep struct {
	Name  string            `json:"name"`
	ID    string            `json:"id"`
	If    string            `json:"if"`
	Shell string            `json:"shell"`
	Run   string            `json:"run"`
	Uses  string            `json:"uses"`
	With  map[string]string `json:"with"`
	Env   map[string]string `json:"env"`
}

func readAction(t *testing.T) (actionFile, string) {
	t.Helper()
	raw, err := os.ReadFile("../../../action.yml")
	if err != nil {
		t.Fatal(err)
	}
	var a actionFile
	if err := yaml.Unmarshal(raw, &a); err != nil {
		t.Fatal(err)
	}
	return a, string(raw)
}

// actionRun is one run of the action: its inputs, the runner's
// environment, and what each step left.
type actionRun struct {
	t         *testing.T
	action    actionFile
	inputs    map[string]string
	workspace string
	env       map[string]string // the runner's variables
	path      []string          // GITHUB_PATH's additions, latest first
	outputs   map[string]map[string]string
	summary   string
	log       map[string]string // step name -> combined output
	uploads   []map[string]string
}

var expression = regexp.MustCompile(`\$\{\{\s*(.*?)\s*\}\}`)

// eval expands every ${{ }} of s.
func (r *actionRun) eval(s string) string {
	return expression.ReplaceAllStringFunc(s, func(m string) string {
		return r.value(expression.FindStringSubmatch(m)[1])
	})
}

// value is one expression: inputs.NAME, steps.ID.outputs.NAME, or
// REF == 'literal' (for if:).
func (r *actionRun) value(e string) string {
	if lhs, lit, ok := strings.Cut(e, " == "); ok {
		lit = strings.TrimSpace(lit)
		if len(lit) < 2 || lit[0] != '\'' || lit[len(lit)-1] != '\'' {
			r.t.Fatalf("unsupported expression %q", e)
		}
		return strconv.FormatBool(r.value(strings.TrimSpace(lhs)) == lit[1:len(lit)-1])
	}
	parts := strings.Split(e, ".")
	switch {
	case len(parts) == 2 && parts[0] == "inputs":
		in, ok := r.action.Inputs[parts[1]]
		if !ok {
			r.t.Fatalf("expression %q: no input %q", e, parts[1])
		}
		if v, ok := r.inputs[parts[1]]; ok {
			return v
		}
		return in.Default
	case len(parts) == 4 && parts[0] == "steps" && parts[2] == "outputs":
		return r.outputs[parts[1]][parts[3]] // "" when unset, as on a runner
	}
	r.t.Fatalf("unsupported expression %q", e)
	return ""
}

// run runs the steps in order, until one fails; it returns the failing
// step's name and exit code ("", 0 when all passed).
func (r *actionRun) run() (string, int) {
	r.outputs, r.log = map[string]map[string]string{}, map[string]string{}
	runnerTemp := filepath.Join(r.t.TempDir(), "runner-temp")
	os.MkdirAll(runnerTemp, 0o755)
	summary := filepath.Join(runnerTemp, "_step_summary")
	for i, s := range r.action.Runs.Steps {
		if s.If != "" && r.eval(s.If) != "true" {
			continue
		}
		if s.Uses != "" {
			with := map[string]string{"uses": s.Uses}
			for k, v := range s.With {
				with[k] = r.eval(v)
			}
			r.uploads = append(r.uploads, with)
			continue
		}
		files := filepath.Join(runnerTemp, fmt.Sprintf("_step%d", i))
		os.MkdirAll(files, 0o755)
		output, pathFile := filepath.Join(files, "output"), filepath.Join(files, "path")
		for _, f := range []string{output, pathFile} {
			os.WriteFile(f, nil, 0o644)
		}
		env := map[string]string{
			"PATH": strings.Join(append(append([]string{}, r.path...), os.Getenv("PATH")), string(os.PathListSeparator)),
			"HOME": r.env["HOME"], "RUNNER_TEMP": runnerTemp, "GITHUB_WORKSPACE": r.workspace, "CI": "true",
			"GITHUB_OUTPUT": output, "GITHUB_PATH": pathFile, "GITHUB_STEP_SUMMARY": summary,
		}
		for k, v := range r.env {
			env[k] = v
		}
		for k, v := range s.Env {
			env[k] = r.eval(v)
		}
		script := filepath.Join(files, "script.sh")
		os.WriteFile(script, []byte(s.Run), 0o644)
		cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", script)
		cmd.Dir = r.workspace
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		out, err := cmd.CombinedOutput()
		r.log[s.Name] = string(out)
		if b, _ := os.ReadFile(summary); len(b) > 0 {
			r.summary = string(b)
		}
		if err != nil {
			code := -1
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			return s.Name, code
		}
		if s.ID != "" {
			r.outputs[s.ID] = readOutputs(r.t, output)
		}
		if b, _ := os.ReadFile(pathFile); len(b) > 0 {
			for _, p := range strings.Fields(string(b)) {
				r.path = append([]string{p}, r.path...)
			}
		}
	}
	return "", 0
}

// readOutputs reads a GITHUB_OUTPUT file: name=value lines, and
// name<<DELIMITER blocks.
func readOutputs(t *testing.T, file string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if l == "" {
			continue
		}
		if name, delim, ok := strings.Cut(l, "<<"); ok && !strings.Contains(name, "=") {
			var v []string
			for i++; i < len(lines) && lines[i] != delim; i++ {
				v = append(v, lines[i])
			}
			out[name] = strings.Join(v, "\n")
			continue
		}
		name, v, ok := strings.Cut(l, "=")
		if !ok {
			t.Fatalf("GITHUB_OUTPUT line %q", l)
		}
		out[name] = v
	}
	return out
}

// actionPolicy is a server with one read-only mount and lint warnings (an
// egress wildcard); widen makes the mount read-write.
const actionPolicy = `version: "v1"
servers: "code-index": {
	image: "code-index:1.7.2"
	mounts: [{source: "shop", target: "/workspace"}]
	scratch: size: "256m"
	network: allow: ["*.example.com:443"]
}
`

func widen(p, waiver string) string {
	p = strings.Replace(p, `target: "/workspace"}`, `target: "/workspace", mode: "rw"}`, 1)
	if waiver != "" {
		p = strings.Replace(p, "\tscratch:", "\twaive: [{rule: \"MOUNT_RW\", reason: \""+waiver+"\"}]\n\tscratch:", 1)
	}
	return p
}

// actionRepo is a git repository whose two commits are the base policy
// and the change under review.
func actionRepo(t *testing.T, change string) string {
	t.Helper()
	repo := t.TempDir()
	gitRun(t, repo, "init", "-q", "-b", "main")
	writeFile(t, filepath.Join(repo, "shop", "main.go"), "package main\n")
	writeFile(t, filepath.Join(repo, "mcpolicy.cue"), actionPolicy)
	gitRun(t, repo, "add", "-A")
	gitRun(t, repo, "commit", "-q", "-m", "base")
	writeFile(t, filepath.Join(repo, "mcpolicy.cue"), change)
	gitRun(t, repo, "commit", "-q", "--allow-empty", "-am", "change")
	return repo
}

func newActionRun(t *testing.T, workspace string, inputs map[string]string) *actionRun {
	a, _ := readAction(t)
	return &actionRun{t: t, action: a, inputs: inputs, workspace: workspace,
		env: map[string]string{"HOME": t.TempDir(), "RUNNER_OS": "Linux", "RUNNER_ARCH": "X64"}}
}

// sarifRunDoc is what the test reads of a SARIF file the action wrote.
type sarifRunDoc struct {
	Runs []struct {
		AutomationDetails struct{ ID string }
		Tool              struct {
			Driver struct {
				Rules []struct {
					ID         string
					Properties map[string]any
				}
			}
		}
		Results []struct {
			RuleID              string
			Level               string
			PartialFingerprints map[string]string
			Suppressions        []any
		}
	}
}

// checkSARIF validates a SARIF file against the official schema and
// checks its category, each rule's security-severity and each result's
// fingerprint; it returns the document.
func checkSARIF(t *testing.T, file, category string) sarifRunDoc {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := sariftest.Validate(t, raw); err != nil {
		t.Fatalf("%s is not SARIF 2.1.0: %v", file, err)
	}
	var d sarifRunDoc
	if err := json.Unmarshal(raw, &d); err != nil || len(d.Runs) != 1 {
		t.Fatalf("%s: %v, %d runs", file, err, len(d.Runs))
	}
	run := d.Runs[0]
	if run.AutomationDetails.ID != category {
		t.Errorf("%s: automationDetails.id %q, want %q", file, run.AutomationDetails.ID, category)
	}
	if len(run.Tool.Driver.Rules) == 0 {
		t.Errorf("%s: no rules", file)
	}
	for _, r := range run.Tool.Driver.Rules {
		s, _ := r.Properties["security-severity"].(string)
		if f, err := strconv.ParseFloat(s, 64); err != nil || f <= 0 || f > 10 {
			t.Errorf("%s: rule %s has security-severity %q", file, r.ID, s)
		}
	}
	for _, res := range run.Results {
		if fp := res.PartialFingerprints[findings.FingerprintKey]; !regexp.MustCompile(`^[0-9a-f]{32}:[0-9]+$`).MatchString(fp) {
			t.Errorf("%s: result %s has fingerprint %q", file, res.RuleID, fp)
		}
	}
	return d
}

// TestActionStaticRules: the action is composite; every script runs in
// bash and reads its inputs from env, never from a ${{ }} inside the
// script (an input would be shell code); every action it uses is pinned
// by a full commit SHA.
func TestActionStaticRules(t *testing.T) {
	a, raw := readAction(t)
	if a.Runs.Using != "composite" {
		t.Fatalf("runs.using %q", a.Runs.Using)
	}
	for _, s := range a.Runs.Steps {
		switch {
		case s.Run != "":
			if s.Shell != "bash" {
				t.Errorf("step %q: shell %q, want bash", s.Name, s.Shell)
			}
			if strings.Contains(s.Run, "${{") {
				t.Errorf("step %q: an expression inside run:", s.Name)
			}
		case s.Uses != "":
			if !regexp.MustCompile(`^[\w.-]+/[\w./-]+@[0-9a-f]{40}$`).MatchString(s.Uses) {
				t.Errorf("step %q: uses %q, not pinned by a commit SHA", s.Name, s.Uses)
			}
			if !regexp.MustCompile(regexp.QuoteMeta(s.Uses) + ` # v\d+\.\d+\.\d+\n`).MatchString(raw) {
				t.Errorf("step %q: %s has no version comment", s.Name, s.Uses)
			}
		default:
			t.Errorf("step %q runs nothing", s.Name)
		}
	}
}

// TestActionWidening: a pull request's commit makes a mount read-write.
// The diff's and the lint's SARIF are valid, each in its category, with
// severities and fingerprints; both are uploaded under their category;
// the job's summary shows the change; and the last step fails with diff's
// exit code 6, after the uploads.
func TestActionWidening(t *testing.T) {
	testbin.SkipShort(t, "runs the action's scripts with a built mcpolicy")
	t.Parallel()
	bin := testbin.Mcpolicy(t)
	repo := actionRepo(t, widen(actionPolicy, ""))
	r := newActionRun(t, repo, map[string]string{"mcpolicy": bin})
	step, code := r.run()
	if step != "Verdict" || code != ExitWidened {
		t.Fatalf("failed at %q with %d, want Verdict with %d; logs:\n%v", step, code, ExitWidened, r.log)
	}
	if !strings.Contains(r.log["Verdict"], "::error title=mcpolicy diff::the policies widen a grant against HEAD^") {
		t.Errorf("Verdict's log:\n%s", r.log["Verdict"])
	}
	if got := r.outputs["diff"]["widened"]; got != "true" {
		t.Errorf("widened=%q", got)
	}
	diffDoc := checkSARIF(t, r.outputs["diff"]["sarif"], "mcpolicy/diff/")
	if res := diffDoc.Runs[0].Results; len(res) != 1 || res[0].RuleID != "MOUNT_RW" || res[0].Level != "error" || len(res[0].Suppressions) != 0 {
		t.Errorf("diff results %+v, want one unsuppressed MOUNT_RW error", res)
	}
	lintDoc := checkSARIF(t, r.outputs["lint"]["sarif"], "mcpolicy/lint/")
	if len(lintDoc.Runs[0].Results) == 0 {
		t.Error("lint: no result (the policy's egress wildcard is a warning)")
	}
	if len(r.uploads) != 2 {
		t.Fatalf("%d uploads, want 2", len(r.uploads))
	}
	for i, want := range []map[string]string{
		{"sarif_file": r.outputs["diff"]["sarif"], "category": "mcpolicy/diff/"},
		{"sarif_file": r.outputs["lint"]["sarif"], "category": "mcpolicy/lint/"},
	} {
		u := r.uploads[i]
		if !strings.HasPrefix(u["uses"], "github/codeql-action/upload-sarif@") || u["sarif_file"] != want["sarif_file"] || u["category"] != want["category"] {
			t.Errorf("upload %d: %v, want %v", i, u, want)
		}
	}
	if !strings.Contains(r.summary, "MOUNT_RW") {
		t.Errorf("the job summary lacks the change:\n%s", r.summary)
	}
	// The log shows the change in text, with workflow commands stopped
	// around it: a policy's text is never a command.
	log := r.log["mcpolicy diff"]
	if m := regexp.MustCompile(`(?s)::stop-commands::(\S+)\n.*WIDENED MOUNT_RW.*\n::(\S+)::\n`).FindStringSubmatch(log); m == nil || m[1] != m[2] {
		t.Errorf("the diff's text is not between stop-commands and its token:\n%s", log)
	}

	// Upload off, category given: no upload, the runs in that category.
	r = newActionRun(t, repo, map[string]string{"mcpolicy": bin, "upload": "false", "category": "policies/"})
	if step, code := r.run(); step != "Verdict" || code != ExitWidened {
		t.Fatalf("failed at %q with %d; logs:\n%v", step, code, r.log)
	}
	checkSARIF(t, r.outputs["diff"]["sarif"], "policies/diff/")
	checkSARIF(t, r.outputs["lint"]["sarif"], "policies/lint/")
	if len(r.uploads) != 0 {
		t.Errorf("upload false, and %d uploads", len(r.uploads))
	}
}

// TestActionWaivedAndBaseBranch: a widening the policy waives passes, its
// result a suppressed one; in a pull request (GITHUB_BASE_REF) whose
// checkout lacks the base branch, the action fetches it and compares
// against it. A lint at --fail-on info fails the verdict with lint's 5.
func TestActionWaivedAndBaseBranch(t *testing.T) {
	testbin.SkipShort(t, "runs the action's scripts with a built mcpolicy")
	t.Parallel()
	bin := testbin.Mcpolicy(t)
	origin := actionRepo(t, actionPolicy) // main: the base, then a commit that changes nothing
	work := t.TempDir()
	gitRun(t, work, "clone", "-q", origin, ".")
	writeFile(t, filepath.Join(work, "mcpolicy.cue"), widen(actionPolicy, "the indexer writes its cache"))
	gitRun(t, work, "commit", "-q", "-am", "pr")
	gitRun(t, work, "update-ref", "-d", "refs/remotes/origin/main") // as a checkout of the PR's merge commit only

	r := newActionRun(t, work, map[string]string{"mcpolicy": bin})
	r.env["GITHUB_BASE_REF"] = "main"
	if step, code := r.run(); step != "" {
		t.Fatalf("failed at %q with %d; logs:\n%v", step, code, r.log)
	}
	if got := r.outputs["diff"]["against"]; got != "origin/main" {
		t.Errorf("against %q, want origin/main", got)
	}
	if got := r.outputs["diff"]["widened"]; got != "false" {
		t.Errorf("widened=%q for a waived widening", got)
	}
	d := checkSARIF(t, r.outputs["diff"]["sarif"], "mcpolicy/diff/")
	if res := d.Runs[0].Results; len(res) != 1 || res[0].RuleID != "MOUNT_RW" || len(res[0].Suppressions) != 1 {
		t.Errorf("diff results %+v, want one suppressed MOUNT_RW", res)
	}

	r = newActionRun(t, work, map[string]string{"mcpolicy": bin, "lint-fail-on": "info", "against": "origin/main"})
	if step, code := r.run(); step != "Verdict" || code != ExitFindings || !strings.Contains(r.log["Verdict"], "::error title=mcpolicy lint::") {
		t.Errorf("lint-fail-on info: failed at %q with %d; logs:\n%v", step, code, r.log)
	}

	r = newActionRun(t, work, map[string]string{"mcpolicy": bin, "against": "no-such-ref"})
	if step, code := r.run(); step != "mcpolicy diff" || code != 1 || !strings.Contains(r.log[step], "no commit no-such-ref") {
		t.Errorf("a missing base: failed at %q with %d; logs:\n%v", step, code, r.log)
	}
}

// TestActionInstall: the release is downloaded (here from a file: URL
// laid out as a GitHub release: mcpolicy_VERSION_OS_ARCH.tar.gz and
// SHA256SUMS), checked against SHA256SUMS and the sha256 input, and
// installed on PATH; a tampered archive, a wrong sha256 and an unpinned
// version are refused.
func TestActionInstall(t *testing.T) {
	testbin.SkipShort(t, "runs the action's scripts with a built mcpolicy")
	t.Parallel()
	bin := testbin.Mcpolicy(t)
	repo := actionRepo(t, actionPolicy)
	const version = "v0.1.0"
	// A stub stands for mcpolicy-launch, and for mcpolicy in the releases
	// the install refuses before it unpacks them.
	stub := filepath.Join(t.TempDir(), "stub")
	writeFile(t, stub, "#!/bin/sh\nexit 0\n")
	release := func(t *testing.T, tamper bool, mcpolicy string) (url, sum string) {
		dir := filepath.Join(t.TempDir(), version)
		os.MkdirAll(dir, 0o755)
		stem := "mcpolicy_" + version + "_linux_amd64"
		archive := filepath.Join(dir, stem+".tar.gz")
		writeTarGz(t, archive, map[string]string{stem + "/mcpolicy": mcpolicy, stem + "/mcpolicy-launch": stub})
		b, err := os.ReadFile(archive)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.Sum256(b)
		sum = hex.EncodeToString(h[:])
		listed := sum
		if tamper {
			listed = strings.Repeat("0", 64)
		}
		writeFile(t, filepath.Join(dir, "SHA256SUMS"), listed+"  "+stem+".tar.gz\n"+strings.Repeat("1", 64)+"  mcpolicy_"+version+"_darwin_arm64.tar.gz\n")
		return "file://" + filepath.Dir(dir) + "/{version}", sum
	}

	url, sum := release(t, false, bin)
	r := newActionRun(t, repo, map[string]string{"version": version, "download-url": url, "sha256": strings.ToUpper(sum)})
	if step, code := r.run(); step != "" {
		t.Fatalf("failed at %q with %d; logs:\n%v", step, code, r.log)
	}
	installed := r.outputs["install"]["path"]
	if filepath.Base(installed) != "mcpolicy" || len(r.path) != 1 || filepath.Dir(installed) != r.path[0] {
		t.Errorf("installed %q, PATH additions %v", installed, r.path)
	}
	if _, err := os.Stat(filepath.Join(r.path[0], "mcpolicy-launch")); err != nil {
		t.Errorf("mcpolicy-launch not installed beside mcpolicy: %v", err)
	}
	checkSARIF(t, r.outputs["diff"]["sarif"], "mcpolicy/diff/")

	for _, c := range []struct {
		name   string
		inputs func(url, sum string) map[string]string
		tamper bool
		want   string
	}{
		{"tampered", func(url, _ string) map[string]string {
			return map[string]string{"version": version, "download-url": url}
		}, true,
			"does not match SHA256SUMS of " + version},
		{"wrong sha256", func(url, _ string) map[string]string {
			return map[string]string{"version": version, "download-url": url, "sha256": strings.Repeat("ab", 32)}
		}, false, "not the input sha256"},
		{"latest", func(url, _ string) map[string]string {
			return map[string]string{"version": "latest", "download-url": url}
		}, false,
			"a release tag such as v0.1.0 is required (got 'latest')"},
		{"no version", func(url, _ string) map[string]string { return map[string]string{"download-url": url} }, false,
			"a release tag such as v0.1.0 is required (got '')"},
		{"a version not released", func(url, _ string) map[string]string {
			return map[string]string{"version": "v0.2.0", "download-url": url}
		}, false,
			"downloading file://"},
	} {
		url, sum := release(t, c.tamper, stub)
		r := newActionRun(t, repo, c.inputs(url, sum))
		step, code := r.run()
		if step != "Install mcpolicy" || code != 1 || !strings.Contains(r.log[step], c.want) {
			t.Errorf("%s: failed at %q with %d, want the install with %q; log:\n%s", c.name, step, code, c.want, r.log[step])
		}
		if len(r.path) != 0 {
			t.Errorf("%s: PATH changed: %v", c.name, r.path)
		}
	}
}

// writeTarGz writes an archive of files (name in the archive -> file).
func writeTarGz(t *testing.T, dst string, files map[string]string) {
	t.Helper()
	f, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, _ := gzip.NewWriterLevel(f, gzip.BestSpeed)
	tw := tar.NewWriter(gz)
	for name, src := range files {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
}
