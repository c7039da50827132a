package lint_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler/lint"
	"github.com/mcpolicy/mcpolicy/schema"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestParseNotesInEveryFormat: a PARSE note (a repair, info) and a PARSE
// error (a file not read) are findings of no server, in file order, in
// every format; the SARIF document describes PARSE and validates.
func TestParseNotesInEveryFormat(t *testing.T) {
	rep := lint.Run(targets(t, lint.Lookup("MOUNT_HOME").Bad), lint.Options{})
	rep.AddNotes([]lint.Note{
		{Pos: schema.Pos{File: "a.json", Line: 2, Col: 1}, Msg: "a fragment, read as an object"},
		{Pos: schema.Pos{File: "broken.json", Line: 3, Col: 28}, Msg: "not valid JSON; the file is not linted", Unread: true},
		{Pos: schema.Pos{File: "gone.json"}, Msg: "cannot open: no such file or directory", Unread: true},
	})
	var files []string
	for _, f := range rep.Findings {
		if f.Rule == lint.ParseID {
			files = append(files, f.Pos.File)
		}
	}
	if strings.Join(files, " ") != "a.json broken.json gone.json" {
		t.Errorf("order: %q", files)
	}
	if worst, _ := rep.Worst(); worst != lint.Error {
		t.Errorf("worst %v", worst)
	}
	want := map[string][]string{
		"text":     {"a.json:2:1: PARSE info a fragment, read as an object\n", "broken.json:3:28: PARSE error not valid JSON; the file is not linted\n", "gone.json: PARSE error cannot open"},
		"json":     {`"rule": "PARSE",`, `"severity": "info",`, `"server": "",`},
		"github":   {"::notice file=a.json,line=2,col=1,title=PARSE::a fragment, read as an object\n", "::error file=broken.json,line=3,col=28,title=PARSE::not valid JSON", "::error file=gone.json,title=PARSE::cannot open"},
		"sarif":    {`"ruleId": "PARSE"`, `"id": "PARSE"`, `"text": "a fragment, read as an object"`},
		"markdown": {"### files\n", "| info | `PARSE` | a.json:2:1 | a fragment, read as an object |\n", "| error | `PARSE` | broken.json:3:28 | not valid JSON; the file is not linted |\n"},
	}
	for _, format := range lint.Formats {
		var buf bytes.Buffer
		if err := lint.Write(&buf, rep, format, "test"); err != nil {
			t.Fatal(err)
		}
		if len(want[format]) == 0 {
			t.Errorf("%s: no expectation", format)
		}
		for _, w := range want[format] {
			if !strings.Contains(buf.String(), w) {
				t.Errorf("%s lacks %q:\n%s", format, w, buf.String())
			}
		}
		if format == "sarif" {
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(buf.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			if err := officialSARIFSchema(t).Validate(doc); err != nil {
				t.Errorf("SARIF does not validate: %v", err)
			}
		}
	}
	// Without notes, SARIF lists the registry alone.
	var buf bytes.Buffer
	lint.Write(&buf, lint.Run(targets(t, lint.Lookup("MOUNT_HOME").Good), lint.Options{}), "sarif", "test")
	if strings.Contains(buf.String(), `"PARSE"`) {
		t.Errorf("PARSE described with no note")
	}
}
