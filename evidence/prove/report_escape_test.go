package prove

import "testing"

// The escapers, case by case: ordinary strings as they were, hostile
// ones inert. report_redteam_test.go runs them through the whole report.
func TestMdText(t *testing.T) {
	for in, want := range map[string]string{
		"ro mount ${PROJECT_ROOT} -> /workspace (mcpolicy.cue:9:3)": "ro mount ${PROJECT_ROOT} -> /workspace (mcpolicy.cue:9:3)",
		"--tool write_file's path (a write)":                        "--tool write_file's path (a write)",
		"Error: access denied - path outside allowed directories":   "Error: access denied - path outside allowed directories",
		"a|b":             `a\|b`,
		"a\nb\rc":         `a\x0ab\x0dc`,
		"<!-- x -->":      "&lt;!-- x -->", // > opens nothing without <
		"&#x202e;":        "&amp;#x202e;",
		"`x`":             "\\`x\\`",
		"**b** _i_ ~~s~~": `\*\*b\*\* \_i\_ \~\~s\~\~`,
		"[l](u) ![i](u)":  `\[l\](u) !\[i\](u)`,
		"snake_case _x":   `snake_case \_x`,
		"$a$ and $b":      `\$a\$ and \$b`,
		"cost $5":         "cost $5",
		`a\|b`:            `a\\\|b`,
		`C:\dir`:          `C:\dir`,
		`end\`:            `end\\`,
		"\x1b[31m\u202e":  `\x1b\[31m\u202e`,
		"":                "",
	} {
		if got := mdText(in); got != want {
			t.Errorf("mdText(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMdCode(t *testing.T) {
	for _, c := range []struct {
		in   string
		cell bool
		want string
	}{
		{"/workspace/README.md", true, "`/workspace/README.md`"},
		{"/tmp/mcpolicy-prove-sock-*/host.sock", true, "`/tmp/mcpolicy-prove-sock-*/host.sock`"},
		{"a|b", true, "`a\\|b`"},
		{"a|b", false, "`a|b`"},
		{"a`b", true, "``a`b``"},
		{"`a", true, "`` `a ``"},
		{"a```b``", true, "```` a```b`` ````"},
		{" a ", true, "`  a  `"},
		{"  ", true, "`  `"},
		{"", true, "` `"},
		{"<!--\r", true, "`<!--\\x0d`"},
	} {
		if got := mdCode(c.in, c.cell); got != c.want {
			t.Errorf("mdCode(%q, %v) = %q, want %q", c.in, c.cell, got, c.want)
		}
	}
}

func TestMdFence(t *testing.T) {
	for _, c := range []struct {
		info  string
		lines []string
		want  string
	}{
		{"", []string{"started", "\tat main (index.js:1:1)", ""}, "```\nstarted\n\tat main (index.js:1:1)\n\n```\n"},
		{"sh", nil, "```sh\n```\n"},
		{"", []string{"```", "~~~"}, "````\n```\n~~~\n````\n"},
		{"", []string{"a ````` b", "\x1b[2J\r"}, "``````\na ````` b\n\\x1b[2J\\x0d\n``````\n"},
	} {
		if got := mdFence(c.info, c.lines); got != c.want {
			t.Errorf("mdFence(%q, %q) = %q, want %q", c.info, c.lines, got, c.want)
		}
	}
}
