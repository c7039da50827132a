package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/mcpolicy/mcpolicy/emit/kubernetes"
)

const kubeCredPolicy = `version: "v1"
servers: gh: {
	image: "ghcr.io/x/gh:1"
	backends: ["kubernetes"]
	accept: ["kubernetes-host-users"]
	network: allow: ["api.github.com:443"]
	credentials: GITHUB_TOKEN: to: ["api.github.com:443"]
}
`

// TestCredentialsCommand: mcpolicy credentials prints the three objects,
// split by reader: the proxy's Secret holds the value, the CA key and the
// placeholder; the server's Secret the placeholder alone; the ConfigMap
// the CA and the bundle. The built manifest names them and holds neither
// the value nor the placeholder. Without the value it says which
// variable to set; a server without credentials is refused.
func TestCredentialsCommand(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", t.TempDir())
	writeFile(t, filepath.Join(dir, "mcpolicy.cue"), kubeCredPolicy)
	value := "ghp_" + strings.Repeat("Ab3", 12)

	t.Setenv("GITHUB_TOKEN", "")
	os.Unsetenv("GITHUB_TOKEN")
	if code, _, stderr := run(t, "credentials", "gh", "-p", dir); code != ExitError || !strings.Contains(stderr, "GITHUB_TOKEN is not set") {
		t.Errorf("without the value: exit %d, %s", code, stderr)
	}
	t.Setenv("GITHUB_TOKEN", value)
	code, out, stderr := run(t, "credentials", "gh", "-p", dir, "--namespace", "tools")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	docs := map[string]map[string]any{}
	for _, doc := range strings.Split(out, "\n---\n")[1:] {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		md := m["metadata"].(map[string]any)
		if md["namespace"] != "tools" {
			t.Errorf("%s: namespace %v", md["name"], md["namespace"])
		}
		docs[md["name"].(string)] = m
	}
	keys := func(name, field string) []string {
		var ks []string
		for k := range docs[name][field].(map[string]any) {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		return ks
	}
	if got := strings.Join((keys(kubernetes.CredentialsSecret("gh"), "data")), " "); got != "GITHUB_TOKEN GITHUB_TOKEN.placeholder session-ca.crt session-ca.key" {
		t.Errorf("the proxy's Secret: %s", got)
	}
	if got := strings.Join(keys(kubernetes.PlaceholdersSecret("gh"), "data"), " "); got != "GITHUB_TOKEN" {
		t.Errorf("the server's Secret: %s", got)
	}
	if got := strings.Join((keys(kubernetes.SessionCAConfigMap("gh"), "data")), " "); got != "ca-bundle.pem session-ca.pem" {
		t.Errorf("the ConfigMap: %s", got)
	}
	var proxy, server struct {
		Data map[string][]byte `json:"data"`
	}
	p, _ := yaml.Marshal(docs[kubernetes.CredentialsSecret("gh")])
	s, _ := yaml.Marshal(docs[kubernetes.PlaceholdersSecret("gh")])
	if err := yaml.Unmarshal(p, &proxy); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(s, &server); err != nil {
		t.Fatal(err)
	}
	ph := string(server.Data["GITHUB_TOKEN"])
	if string(proxy.Data["GITHUB_TOKEN"]) != value || string(proxy.Data["GITHUB_TOKEN.placeholder"]) != ph || ph == value || len(ph) != len(value) {
		t.Errorf("value %q, placeholders %q and %q", proxy.Data["GITHUB_TOKEN"], proxy.Data["GITHUB_TOKEN.placeholder"], ph)
	}
	if strings.Contains(string(s), value) || strings.Contains(string(s), "PRIVATE KEY") {
		t.Error("the server's Secret holds the value or the CA's key")
	}
	cm, _ := yaml.Marshal(docs[kubernetes.SessionCAConfigMap("gh")])
	if strings.Contains(string(cm), "PRIVATE KEY") {
		t.Error("the ConfigMap holds the CA's key")
	}

	// Another run draws another placeholder.
	_, again, _ := run(t, "credentials", "gh", "-p", dir)
	if strings.Contains(again, ph) {
		t.Error("a second run drew the same placeholder")
	}

	// The build's manifest names the objects and holds no value.
	out2 := t.TempDir()
	if code, _, stderr := run(t, "build", dir, "-o", out2); code != 0 {
		t.Fatalf("build: %d %s", code, stderr)
	}
	man, err := os.ReadFile(filepath.Join(out2, "kubernetes", "gh.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"mcpolicy credentials gh | kubectl apply -f -", "name: gh-credential-placeholders", "secretName: gh-credentials", "name: gh-session-ca", "--credentials-dir"} {
		if !strings.Contains(string(man), want) {
			t.Errorf("the manifest does not hold %q", want)
		}
	}
	if strings.Contains(string(man), value) || strings.Contains(string(man), ph) {
		t.Error("the manifest holds the value or the placeholder")
	}

	writeFile(t, filepath.Join(dir, "mcpolicy.cue"), strings.ReplaceAll(kubeCredPolicy, "credentials: GITHUB_TOKEN: to: [\"api.github.com:443\"]\n", ""))
	if code, _, stderr := run(t, "credentials", "gh", "-p", dir); code != ExitError || !strings.Contains(stderr, "has no credentials") {
		t.Errorf("without credentials: exit %d, %s", code, stderr)
	}
}

// TestCredentialsRefusedBeforeReading: a server the kubernetes backend
// does not build (its values would be carried into a cluster that runs
// nothing of it) and a bad namespace are refused before any value is
// read: the grant's command, which writes a mark, never runs.
func TestCredentialsRefusedBeforeReading(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", t.TempDir())
	mark := filepath.Join(dir, "ran")
	withCommand := strings.ReplaceAll(kubeCredPolicy, `credentials: GITHUB_TOKEN: to: ["api.github.com:443"]`,
		`credentials: GITHUB_TOKEN: {from: command: ["sh", "-c", "touch `+mark+`; echo ghp_R3alT0kenValue0123456789abcdefABCD"], to: ["api.github.com:443"]}`)
	for _, c := range []struct {
		policy string
		args   []string
		want   string
	}{
		{strings.ReplaceAll(withCommand, `backends: ["kubernetes"]`, `backends: ["docker"]`), nil, "does not list the kubernetes backend (backends: docker)"},
		{withCommand, []string{"--namespace", "Tools_NS"}, `namespace "Tools_NS"`},
	} {
		writeFile(t, filepath.Join(dir, "mcpolicy.cue"), c.policy)
		code, out, stderr := run(t, append([]string{"credentials", "gh", "-p", dir}, c.args...)...)
		if code == 0 || !strings.Contains(stderr, c.want) || out != "" {
			t.Errorf("%q: exit %d, %s; want a refusal saying %q", c.args, code, stderr, c.want)
		}
		if _, err := os.Stat(mark); err == nil {
			t.Errorf("%q: the grant's command ran before the refusal", c.args)
			os.Remove(mark)
		}
	}
	// The same command runs once the policy is right.
	writeFile(t, filepath.Join(dir, "mcpolicy.cue"), withCommand)
	if code, _, stderr := run(t, "credentials", "gh", "-p", dir); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(mark); err != nil {
		t.Error("the grant's command did not run (the test proves nothing)")
	}
}

// TestCredentialsOutputOutsideGrants: stdout redirected to a file in the
// project (which its servers are given) is refused, nothing written; a
// file elsewhere gets the objects.
func TestCredentialsOutputOutsideGrants(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", t.TempDir())
	t.Setenv("GITHUB_TOKEN", "ghp_"+strings.Repeat("Ab3", 12))
	writeFile(t, filepath.Join(dir, "mcpolicy.cue"), kubeCredPolicy)
	for _, c := range []struct {
		path, want string
	}{
		{filepath.Join(dir, "secrets.yaml"), "lies inside the project"},
		{filepath.Join(t.TempDir(), "secrets.yaml"), ""},
	} {
		f, err := os.Create(c.path)
		if err != nil {
			t.Fatal(err)
		}
		var errb strings.Builder
		code := Run([]string{"credentials", "gh", "-p", dir}, f, &errb)
		f.Close()
		got, _ := os.ReadFile(c.path)
		switch {
		case c.want != "" && (code == 0 || !strings.Contains(errb.String(), c.want) || len(got) > 0):
			t.Errorf("%s: exit %d, %d bytes written, %s; want a refusal saying %q", c.path, code, len(got), errb.String(), c.want)
		case c.want == "" && (code != 0 || !strings.Contains(string(got), "kind: Secret")):
			t.Errorf("%s: exit %d, %s", c.path, code, errb.String())
		}
	}
}

// TestCredentialsCommandRefusals: without its argument, credentials lists
// the servers and the command line to run; for a server that does not
// list the kubernetes backend it prints nothing, and says what to do.
func TestCredentialsCommandRefusals(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", t.TempDir())
	file := filepath.Join(dir, "mcpolicy.cue")
	writeFile(t, file, kubeCredPolicy)
	t.Setenv("GITHUB_TOKEN", "ghp_"+strings.Repeat("Ab3", 12))
	code, out, stderr := run(t, "credentials", "-p", dir)
	want := "mcpolicy: credentials needs a SERVER; the servers of the policy at " + dir + ":\n  gh  " + file + ":2\nhint: mcpolicy credentials gh -p " + dir + " | kubectl apply -f -\n"
	if code != ExitError || out != "" || stderr != want {
		t.Errorf("without its argument: exit %d, stdout %q, stderr:\n%s\nwant:\n%s", code, out, stderr, want)
	}
	writeFile(t, file, strings.Replace(kubeCredPolicy, `backends: ["kubernetes"]`, `backends: ["docker"]`, 1))
	code, out, stderr = run(t, "credentials", "gh", "-p", dir)
	want = `mcpolicy: server "gh" does not list the kubernetes backend (backends: docker): its credentials are drawn by mcpolicy run at each spawn, and no manifest reads these objects; add "kubernetes" to its backends to run it in a cluster` + "\n"
	if code != ExitError || out != "" || stderr != want {
		t.Errorf("a docker server: exit %d, stdout %q, stderr:\n%s\nwant:\n%s", code, out, stderr, want)
	}
}
