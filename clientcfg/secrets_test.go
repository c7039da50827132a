package clientcfg

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// f joins the parts of a fake credential: the values below are random
// strings in the shape of real formats, never real ones, written in pieces
// so that no scanner mistakes this file for a leak.
func f(parts ...string) string { return strings.Join(parts, "") }

const (
	b36a = "xEEsAoCaA2QTqpOoast0vQj8VMtbYo9Mqb5j"
	b36b = "ZMQObDDMOTsoYtxqAYfwFBHPl8KsLcsf1YaH"
	b82  = "xpFjttuDDekSEU2aC13Fa61ESYhD1NfFPb9jTo6z5xcIcQPzMuEGQ80YRP10eougTfIhpazOc61hVRd82W"
	b20  = "zj5OSqplLapHp6hgPjry"
	b40  = "hAOgshDBj1zpi4i4zBGozlxQF0l3AnQB2bFtKsh2"
	b48  = "eWYtVFpIPEnLCGiFJfWOQgUQudDfZFUWdGvIkgTxzszeomDn"
	b35  = "OdjQ9IS8onGY2O2IQ0OUV86rGbNNZZGnELE"
	b93  = "wiTDVT6lgmbf7xUsP0P9gjcl7NSWShU8WownKBfl7fDf4cKjjRUXkXnAcWwhR3zAqhNyMmwVCxBbwm0fn8yA4YdLnAXUQ"
	b43  = "LA91bdh50H0IaiuMNfLItCjMB8sKNZAIf5SX7jNctqt"
	b64  = "s1Ynr9aESaUm3fZAj9Lo7vAKXgV1r41YWaukxALsxWnkPmZUHcIfraTbJg2V1rmg"
	hx40 = "3ffb0028d3adfc7695755cb24064d289daac6a7e"
	hx32 = "00b0edd2477051587bf1f47afdba79d0"
	aws  = "0aA3taBrdmzEZJb6hPNOQFEfKsGPSpFk+gMFIYtK"
)

// TestSecretHeuristic: token formats are read first, then placeholders,
// then settings; a name alone makes a secret of what is left. Each case is
// a value as published configs write it (fake).
func TestSecretHeuristic(t *testing.T) {
	jwt := f("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9", ".", "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6Ik1lIn0", ".", "Qm9ZsT1xVtA3kLr8pWn2cYd5HgEf7JuIoPaSbNcRq0w")
	for _, c := range []struct {
		name, value string
		want        string // "" when not a secret, else a word of the kind
	}{
		// 1. Token formats, whatever the name.
		{"GITHUB_PERSONAL_ACCESS_TOKEN", f("ghp_", b36a), "GitHub"},
		{"X", f("gho_", b36b), "GitHub"},
		{"GH", f("github_pat_", "11AB", b20, "_", b36a, b20[:18]), "GitHub"},
		{"X", f("github_pat_", "11ABCDEFG0123456789"), "GitHub"}, // an older, shorter one
		{"X", f("ghp_", "0123456789abcdefghij"), "GitHub"},
		{"X", f("ghp_", b36a[:10], "your", b36a[14:]), "GitHub"}, // the exact shape, even spelling "your"
		{"GITLAB_PERSONAL_ACCESS_TOKEN", f("glpat-", b20), "GitLab"},
		{"SLACK_BOT_TOKEN", f("xox", "b-", "2849123456789-7412589630147-", b20[:12], "Kq2"), "Slack"},
		{"SLACK_USER_TOKEN", f("xox", "p-", "2849123456789-1234567890123-9876543210987-", hx32), "Slack"},
		{"SLACK_APP_TOKEN", f("xa", "pp-1-", "A0123BCDE45-", "1234567890123-", hx32), "Slack"},
		{"AWS_ACCESS_KEY_ID", f("AK", "IA", "6DWYANWFUVX16TPH"), "AWS"},
		{"X", f("AS", "IA", "Q3JTRZ7PLKM2WX4N"), "AWS"},
		{"X", f("AK", "IA", "IOSFODNN7EXAMPLE"), "AWS"}, // AWS's own documentation key: a real shape
		{"AWS_SECRET_ACCESS_KEY", aws, "AWS"},
		{"OPENAI_API_KEY", f("sk-", b48), "OpenAI"},
		{"OPENAI_API_KEY", f("sk-", "proj-", b64, "_", b36a), "OpenAI"},
		{"ANTHROPIC_API_KEY", f("sk-", "ant-api03-", b93, "AA"), "Anthropic"},
		{"X", f("sk-", "ant-api03-abcdefghijk"), "Anthropic"},
		{"OPENROUTER_API_KEY", f("sk-", "or-v1-", hx32, hx32), "OpenAI"},
		{"STRIPE_SECRET_KEY", f("sk", "_live_", b48[:24]), "Stripe"},
		{"NPM_TOKEN", f("npm", "_", b36b), "npm"},
		{"HF_TOKEN", f("hf", "_", b36a[:34]), "Hugging Face"},
		{"GOOGLE_MAPS_API_KEY", f("AI", "za", b35), "Google"},
		{"GROQ_API_KEY", f("gsk", "_", b48, "Wq9x"), "Groq"},
		{"PERPLEXITY_API_KEY", f("pplx", "-", b48), "Perplexity"},
		{"TAVILY_API_KEY", f("tvly", "-dev-", b36a[:32]), "Tavily"},
		{"LINEAR_API_KEY", f("lin", "_api_", b40), "Linear"},
		{"NOTION_TOKEN", f("ntn", "_", b43), "Notion"},
		{"SUPABASE_ACCESS_TOKEN", f("sbp", "_", hx40), "Supabase"},
		{"FIRECRAWL_API_KEY", f("fc", "-", hx32), "Firecrawl"},
		{"X", jwt, "JWT"},
		{"Authorization", "Bearer " + jwt, "JWT"},
		{"DATABASE_URL", "postgres://user:pass@db.example.com:5432/shop", "postgres"},
		{"X", "postgresql://postgres:postgres@localhost/postgres", "postgresql"},
		{"MONGODB_URI", "mongodb+srv://app:Tr0ub4dor@cluster0.ab1cd.mongodb.net/?retryWrites=true", "mongodb+srv"},
		{"REDIS_URL", "redis://:s3cretpw@cache.internal:6379/0", "redis"},
		{"MSSQL", "Server=tcp:db.example.com,1433;Database=shop;User Id=app;Password=Xk9#pQ2!;", "connection string"},
		{"MCP_URL", "https://mcp.example.com/sse?api_key=" + b20, "query"},
		{"OPTS", "--token=" + f("ghp_", b36b), "GitHub"}, // a format anywhere in the value
		{"CONFIG", `{"apiKey":"` + f("sk-", b48) + `"}`, "OpenAI"},
		{"SSH_KEY", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----", "private key"},
		// 2. Placeholders, once no format matched.
		{"GITHUB_TOKEN", f("ghp_", "your_token_here"), ""},
		{"GITHUB_TOKEN", f("ghp_", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"), ""},
		{"GITHUB_PERSONAL_ACCESS_TOKEN", f("github_pat_", "your_token_here"), ""},
		{"AWS_ACCESS_KEY_ID", f("AK", "IA", "XXXXXXXXXXXXXXXX"), ""},
		{"OPENAI_API_KEY", f("sk-", "your-openai-api-key-here"), ""},
		{"ANTHROPIC_API_KEY", f("sk-", "ant-api03-your-key-here-xxxxxxxxxxxxxxxxxxxxxxxxxxxx"), ""},
		{"ANTHROPIC_API_KEY", f("sk-", "ant-..."), ""},
		{"GITHUB_TOKEN", "<YOUR_TOKEN>", ""},
		{"GITHUB_TOKEN", "<your token>", ""},
		{"GITHUB_TOKEN", "YOUR_TOKEN_HERE", ""},
		{"API_KEY", "your-api-key", ""},
		{"BRAVE_API_KEY", "YOUR_API_KEY_HERE", ""},
		{"API_KEY", "[API_KEY]", ""},
		{"API_KEY", "{{API_KEY}}", ""},
		{"API_KEY", "****", ""},
		{"API_KEY", "changeme", ""},
		{"DATABASE_URL", "postgres://user:<password>@localhost/db", ""},
		{"DATABASE_URL", "postgres://user:${DB_PASSWORD}@localhost/db", ""},
		{"DATABASE_URL", "postgresql://localhost:5432/mydb", ""},
		// 0. References.
		{"GITHUB_TOKEN", "${GITHUB_TOKEN}", ""},
		{"GITHUB_TOKEN", "${input:token}", ""},
		{"GITHUB_TOKEN", "${env:GITHUB_TOKEN}", ""},
		{"GITHUB_TOKEN", "$GITHUB_TOKEN", ""},
		{"API_KEY", "%API_KEY%", ""},
		{"Authorization", "Bearer ${TOKEN}", ""},
		{"GITHUB_TOKEN", "", ""},
		// 3. Settings.
		{"AWS_REGION", "us-east-1", ""},
		{"LOG_LEVEL", "debug", ""},
		{"DEBUG", "true", ""},
		{"READ_ONLY", "false", ""},
		{"PORT", "8080", ""},
		{"MAX_TOKENS", "4096", ""},
		{"TOKEN_LIMIT", "100000", ""},
		{"TIMEOUT", "30s", ""},
		{"BASE_URL", "https://api.github.com", ""},
		{"GITHUB_TOKEN_URL", "https://github.com/login/oauth/access_token", ""},
		{"TOKEN_FILE", "/run/secrets/github_token", ""},
		{"GOOGLE_APPLICATION_CREDENTIALS", "/home/me/.config/gcloud/application_default_credentials.json", ""},
		{"ROOT", "/Users/me/projects/some-long-folder-name", ""},
		{"KEY_PATH", `C:\Users\me\.ssh\id_ed25519`, ""},
		{"AUTH_TYPE", "oauth", ""},
		{"API_KEY_HEADER", "X-API-Key", ""},
		{"MODEL", "claude-sonnet-4-20250514", ""},
		{"OPENAI_MODEL", "gpt-4o-mini", ""},
		{"GIT_AUTHOR_NAME", "Me", ""},
		{"GIT_AUTHOR_EMAIL", "me@example.com", ""},
		{"NODE_ENV", "production", ""},
		{"ALLOWED_DIRECTORIES", "/home/me/work,/home/me/notes", ""},
		{"PROJECT_ID", "123e4567-e89b-12d3-a456-426614174000", ""},
		// 4. Long and random, whatever the name.
		{"X", "q8Zr2LwT5vN0pXy7KjH3mB6c", "random"},
		{"X", "d41d8cd98f00b204e9800998ecf8427e", "random"},
		// 5. The name says secret, the value is no setting.
		{"API_KEY", "abc", "name"},
		{"DB_PASSWORD", "hunter2", "name"},
		{"DB_PASSWORD", "123456", "name"}, // a number, but a password's
		{"X-API-Key", "k1", "name"},
		{"Authorization", "Bearer abc123", "name"},
		{"Authorization", "Basic dXNlcjpwYXNz", "name"},
		{"CLIENT_SECRET", "s3cr3t-value", "name"},
	} {
		got := secretKind(c.name, c.value)
		if (got == "") != (c.want == "") || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("secretKind(%q, %q) = %q, want %q", c.name, c.value, got, c.want)
		}
	}
}

// TestArgSecrets: a token or a password in an entry's arguments is a
// SECRET_INLINE flag at the argument's position: after a docker image, in
// npx/uvx arguments (--api-key X, --api-key=X, a connection string), in a
// shell command string, in a remote url; settings and references are not.
func TestArgSecrets(t *testing.T) {
	gh := f("ghp_", b36a)
	sk := f("sk-", b48)
	src := `{
  "mcpServers": {
    "docker": {"command": "docker", "args": ["run", "-i", "--rm", "-e", "AWS_REGION=us-east-1", "-e", "LOG_LEVEL=debug", "mcp/slack", "--auth-token", "` + f("xox", "b-", "2849123456789-7412589630147-", b20) + `"]},
    "pg": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-postgres", "postgres://app:Tr0ub4dor@db.example.com/shop"]},
    "opts": {"command": "uvx", "args": ["some-mcp", "--api-key=` + sk + `", "--region", "eu-west-1", "--api-key", "${OPENAI_API_KEY}"]},
    "split": {"command": "npx", "args": ["-y", "tool", "--password", "hunter2", "--token-file", "/run/secrets/t"]},
    "shell": {"command": "sh", "args": ["-c", "GITHUB_TOKEN=` + gh + ` npx -y @modelcontextprotocol/server-github"]},
    "remote": {"url": "https://mcp.example.com/mcp?api_key=` + b20 + `"},
    "header": {"command": "npx", "args": ["mcp-remote", "https://mcp.example.com/sse", "--header", "Authorization: Bearer abc123", "--header", "Authorization:${AUTH_HEADER}"]},
    "clean": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/work", "--log-level", "debug", "https://api.example.com"]},
    "env": {"command": "docker", "args": ["run", "-i", "--rm", "-e", "GITHUB_TOKEN=` + gh + `", "-e", "DEBUG=true", "img:1"]}
  }
}
`
	dir := t.TempDir()
	file := filepath.Join(dir, "claude_desktop_config.json")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	ts := readAll(t, file, "/home/me")
	secrets := func(server string) []string {
		var out []string
		for _, fl := range ts[server].Flags {
			if fl.Kind == "secret-inline" {
				out = append(out, fl.Value+"@"+at(fl.Pos))
			}
		}
		return out
	}
	for server, want := range map[string][]string{
		"docker": {"--auth-token@3:151"},
		"pg":     {"an argument (a password in a postgres:// URL)@4:86"},
		"opts":   {"--api-key@5:53"},
		"split":  {"--password@6:70"},
		"shell":  {"GITHUB_TOKEN@7:47"},
		"remote": {"the url (a secret in a URL's query (api_key))@8:23"},
		"header": {"Authorization@9:100"},
		"clean":  nil,
		"env":    {"GITHUB_TOKEN@11:70"},
	} {
		if got := secrets(server); !slices.Equal(got, want) {
			t.Errorf("%s: secrets %q, want %q", server, got, want)
		}
	}
}

// TestSecretInArgv: a secret reference in args is flagged where the
// entry's client (or the shell of a command string) expands it, and a
// placeholder where a secret goes, by client: the same args read in each
// client's file.
func TestSecretInArgv(t *testing.T) {
	for _, c := range []struct {
		file, arg string
		want      string // the flag's kind, "" for none
	}{
		{".mcp.json", "${GITHUB_TOKEN}", "secret-in-argv"},
		{".mcp.json", "${GITHUB_TOKEN:-x}", "secret-in-argv"},
		{".mcp.json", "${env:GITHUB_TOKEN}", ""}, // Claude Code expands ${VAR} only
		{".mcp.json", "$GITHUB_TOKEN", ""},
		{".mcp.json", "${HOME}", ""},
		{".gemini/settings.json", "$GITHUB_TOKEN", "secret-in-argv"},
		{".cursor/mcp.json", "${env:GITHUB_TOKEN}", "secret-in-argv"},
		{".cursor/mcp.json", "${GITHUB_TOKEN}", ""}, // Cursor expands ${env:VAR} only
		{"windsurf/mcp_config.json", "${env:API_KEY}", "secret-in-argv"},
		{".vscode/mcp.json", "${input:pat}", "secret-in-argv"},
		{".vscode/mcp.json", "${input:name}", ""}, // no password input
		{"claude_desktop_config.json", "${GITHUB_TOKEN}", ""},
		{"claude_desktop_config.json", "--token=${GITHUB_TOKEN}", ""},
		// A shell expands what it is given, in any client.
		{"claude_desktop_config.json", "exec server --token $GITHUB_TOKEN", "secret-in-argv"},
		// Any reference as a secret option's value.
		{".vscode/mcp.json", "--token=${input:name}", "secret-in-argv"},
		{".mcp.json", "-e=GITHUB_TOKEN=${GITHUB_TOKEN}", "secret-in-argv"}, // a secret variable anywhere in an argument
		{".mcp.json", "GITHUB_TOKEN=${GITHUB_TOKEN}", "secret-in-argv"},
		// Placeholders.
		{".mcp.json", "--api-key=YOUR_KEY", "secret-placeholder"},
		{".mcp.json", "<YOUR_API_KEY>", "secret-placeholder"},
		{".mcp.json", "Authorization: Bearer YOUR_PAT", "secret-placeholder"},
		{".mcp.json", "redis://:<password>@cache:6379", "secret-placeholder"},
		{".mcp.json", "<your workspace>", ""},
	} {
		dir := t.TempDir()
		file := filepath.Join(dir, filepath.FromSlash(c.file))
		os.MkdirAll(filepath.Dir(file), 0o755)
		key := "mcpServers"
		if strings.HasPrefix(c.file, ".vscode") {
			key = "servers"
		}
		src := `{"inputs": [{"id": "pat", "password": true}, {"id": "name"}], "` + key + `": {"s": {"command": "npx", "args": ["-y", "x@1", ` + strconv.Quote(c.arg) + `]}}}`
		if strings.Contains(c.arg, " server ") {
			src = `{"mcpServers": {"s": {"command": "sh", "args": ["-c", ` + strconv.Quote(c.arg) + `]}}}`
		}
		ts, err := parse(file, []byte(src), "/home/me", true)
		if err != nil || len(ts) != 1 {
			t.Fatalf("%s %s: %v", c.file, c.arg, err)
		}
		var got []string
		for _, fl := range ts[0].Flags {
			if strings.HasPrefix(string(fl.Kind), "secret-") {
				got = append(got, string(fl.Kind))
			}
		}
		if want := []string{c.want}; c.want == "" && len(got) != 0 || c.want != "" && !slices.Equal(got, want) {
			t.Errorf("%s %q: %q, want %q", c.file, c.arg, got, c.want)
		}
	}
}
