package findings

import (
	"fmt"
	"io"
	"strings"
)

// writeGitHub prints workflow commands, one annotation per unwaived
// finding: a widening fails a pull request where the grant is.
func writeGitHub(w io.Writer, d Doc) error {
	level := map[string]string{Error: "error", Warning: "warning", Info: "notice"}
	for _, f := range d.Findings {
		if f.Waived != "" {
			continue
		}
		if f.Pos.File == "" { // a grant that is gone: no file of the new version holds it
			fmt.Fprintf(w, "::%s title=%s::%s\n", level[f.Level], githubEscape(f.Rule, true),
				githubEscape(f.label()+" (was "+f.Against.String()+")", false))
			continue
		}
		at := fmt.Sprintf(",line=%d,col=%d", f.Pos.Line, f.Pos.Col)
		if f.Pos.Line == 0 { // a whole file (one that cannot be opened)
			at = ""
		}
		fmt.Fprintf(w, "::%s file=%s%s,title=%s::%s\n", level[f.Level],
			githubEscape(f.Pos.File, true), at, githubEscape(f.Rule, true), githubEscape(f.label(), false))
	}
	return nil
}

// githubEscape escapes a workflow-command value (properties also escape
// ':' and ','); the message is formatted before escaping.
func githubEscape(s string, property bool) string {
	s = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
	if property {
		s = strings.NewReplacer(":", "%3A", ",", "%2C").Replace(s)
	}
	return s
}
