package findings

import "testing"

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"runs on another machine (http://10.0.0.5:8080/sse?api_key=sk-proj-abc123&x=1)": "runs on another machine (http://10.0.0.5:8080/sse?api_key=REDACTED&x=1)",
		"runs on another machine (https://user:hunter2pass@mcp.example.com/mcp)":        "runs on another machine (https://user:…@mcp.example.com/mcp)",
		"a URL postgres://app:${PGPASSWORD}@db/x?token=${T}":                            "a URL postgres://app:${PGPASSWORD}@db/x?token=${T}",
		"https://mcp.sentry.dev/mcp and https://a@b.c/?q=1#f":                           "https://mcp.sentry.dev/mcp and https://a@b.c/?q=1#f",
		"no url here: api_key=x": "no url here: api_key=x",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
	f := Finding{Rule: "REMOTE_SERVER", Message: "(https://u:p4ss@h/x?secret=s3)"}.spelt()
	if f.Message != "(https://u:…@h/x?secret=REDACTED)" {
		t.Errorf("spelt: %q", f.Message)
	}
}
