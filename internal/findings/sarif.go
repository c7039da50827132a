package findings

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/mcpolicy/mcpolicy/internal/position"
)

// The SARIF 2.1.0 subset mcpolicy writes, in the field order readers have
// seen since it came from go-sarif (whose output this matches).
type (
	sarifLog struct {
		Version string     `json:"version"`
		Schema  string     `json:"$schema"`
		Runs    []sarifRun `json:"runs"`
	}
	sarifRun struct {
		Tool              sarifTool       `json:"tool"`
		AutomationDetails sarifAutomation `json:"automationDetails"`
		Results           []sarifResult   `json:"results"`
	}
	sarifAutomation struct {
		ID string `json:"id"` // the code scanning category, ending in "/"
	}
	sarifTool struct {
		Driver sarifDriver `json:"driver"`
	}
	sarifDriver struct {
		InformationURI string      `json:"informationUri"`
		Name           string      `json:"name"`
		Rules          []sarifRule `json:"rules"`
		Version        string      `json:"version,omitempty"`
	}
	sarifRule struct {
		ID                   string         `json:"id"`
		Name                 string         `json:"name,omitempty"`
		ShortDescription     sarifText      `json:"shortDescription"`
		FullDescription      *sarifText     `json:"fullDescription,omitempty"`
		DefaultConfiguration sarifDefault   `json:"defaultConfiguration"`
		Help                 *sarifText     `json:"help,omitempty"`
		Properties           sarifRuleProps `json:"properties"`
	}
	sarifRuleProps struct {
		Tags             []string `json:"tags"`
		SecuritySeverity string   `json:"security-severity"`
	}
	sarifText struct {
		Text string `json:"text"`
	}
	sarifDefault struct {
		Level string `json:"level"`
	}
	sarifResult struct {
		RuleID           string             `json:"ruleId"`
		RuleIndex        *int               `json:"ruleIndex,omitempty"` // into the driver's rules
		Level            string             `json:"level"`
		Message          sarifText          `json:"message"`
		Locations        []sarifLocation    `json:"locations"` // empty for a grant that is gone
		RelatedLocations []sarifLocation    `json:"relatedLocations,omitempty"`
		Suppressions     []sarifSuppression `json:"suppressions,omitempty"`
		// PartialFingerprints tie a result to the alert it was in an
		// earlier analysis (FingerprintKey).
		PartialFingerprints map[string]string `json:"partialFingerprints"`
	}
	sarifLocation struct {
		ID               *int `json:"id,omitempty"`
		PhysicalLocation struct {
			ArtifactLocation struct {
				URI string `json:"uri"`
			} `json:"artifactLocation"`
			Region struct {
				StartLine   int `json:"startLine"`
				StartColumn int `json:"startColumn"`
			} `json:"region"`
		} `json:"physicalLocation"`
		Message *sarifText `json:"message,omitempty"`
	}
	sarifSuppression struct {
		Kind          string `json:"kind"`
		Justification string `json:"justification"`
	}
)

const sarifSchema = "https://raw.githubusercontent.com/oasis-tcs/sarif-spec/main/sarif-2.1/schema/sarif-schema-2.1.0.json"

// writeSARIF writes one run: every rule of d.Rules, and a result per
// finding; a waived one carries its waiver as an in-source suppression, a
// change the grant's old position as a related location. The run carries
// its category (Doc.Category), each rule its security-severity, each
// result its fingerprint.
func writeSARIF(w io.Writer, d Doc) error {
	category, err := Category(d.Category)
	if err != nil {
		return err
	}
	run := sarifRun{Results: []sarifResult{}, AutomationDetails: sarifAutomation{category}, Tool: sarifTool{sarifDriver{
		InformationURI: "https://github.com/mcpolicy/mcpolicy", Name: d.Tool, Rules: []sarifRule{}, Version: d.Version}}}
	if run.Tool.Driver.Name == "" {
		run.Tool.Driver.Name = "mcpolicy"
	}
	for _, r := range d.Rules {
		sr := sarifRule{ID: r.ID, Name: r.Name, ShortDescription: sarifText{r.Purpose}, DefaultConfiguration: sarifDefault{sarifLevel(r.Level)},
			Properties: sarifRuleProps{Tags: []string{"security"}, SecuritySeverity: SecuritySeverity(r.Level)}}
		if r.Rationale != "" {
			sr.FullDescription = &sarifText{r.Rationale}
		}
		if r.Remediation != "" {
			sr.Help = &sarifText{r.Remediation}
		}
		run.Tool.Driver.Rules = append(run.Tool.Driver.Rules, sr)
	}
	index := map[string]int{}
	for i, r := range d.Rules {
		index[r.ID] = i
	}
	seen := map[string]int{} // fingerprint -> occurrences so far
	for _, f := range d.Findings {
		var ri *int
		if i, ok := index[f.Rule]; ok {
			ri = &i
		}
		fp := Fingerprint(f)
		seen[fp]++
		res := sarifResult{RuleID: f.Rule, RuleIndex: ri, Level: sarifLevel(f.Level), Message: sarifText{f.label()},
			Locations: []sarifLocation{}, PartialFingerprints: map[string]string{FingerprintKey: fmt.Sprintf("%s:%d", fp, seen[fp])}}
		if f.Pos.File != "" || f.Against.File == "" { // a grant that is gone has no place in the new version
			res.Locations = append(res.Locations, location(f.Pos, nil))
		}
		if f.Against.File != "" { // the file at the old version's git ref, REF:path, is path there
			ref, path := splitRef(f.Against.File)
			before, id := f.Against, 1
			before.File = path
			res.RelatedLocations = []sarifLocation{location(before, &id)}
			res.RelatedLocations[0].Message = &sarifText{"before"}
			if ref != "" {
				res.RelatedLocations[0].Message.Text += " (at " + ref + ")"
			}
		}
		if f.Waived != "" {
			res.Suppressions = []sarifSuppression{{Kind: "inSource", Justification: f.Waived}}
		}
		run.Results = append(run.Results, res)
	}
	b, err := json.MarshalIndent(sarifLog{Version: "2.1.0", Schema: sarifSchema, Runs: []sarifRun{run}}, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// DefaultCategory is the category of a SARIF run when the pass names none.
const DefaultCategory = "mcpolicy/"

// Category is a code scanning category as a SARIF run's
// automationDetails.id. GitHub reads the category as the id up to its last
// "/" (what follows is a run's own id) and keeps one analysis per tool and
// category, so the lint and the diff of one commit, each in a category of
// its own, do not replace each other. A category without a trailing "/"
// gets one, as github/codeql-action/upload-sarif does with its category
// input; "" is DefaultCategory. One with a control character or a space is
// refused.
func Category(c string) (string, error) {
	if c == "" {
		return DefaultCategory, nil
	}
	if strings.ContainsFunc(c, func(r rune) bool { return r <= ' ' || r == 0x7f }) || !utf8.ValidString(c) {
		return "", fmt.Errorf("SARIF category %q: no spaces or control characters (e.g. \"mcpolicy/lint/\")", c)
	}
	if !strings.HasSuffix(c, "/") {
		c += "/"
	}
	return c, nil
}

// SecuritySeverity is a rule's properties.security-severity, from its
// level, in the bands GitHub code scanning reads it by: an error is high
// (7.0-8.9), a warning medium (4.0-6.9), a note (info) low (0.1-3.9).
func SecuritySeverity(level string) string {
	switch level {
	case Error:
		return "8.0"
	case Warning:
		return "5.0"
	}
	return "2.0"
}

// splitRef splits an old version's file, as diff names it, into the git
// ref it was read at and its path there: "HEAD^:p.cue" is HEAD^ and p.cue
// (a git ref holds no ':'); a plain path has no ref.
func splitRef(file string) (ref, path string) {
	r, p, ok := strings.Cut(file, ":")
	if !ok || r == "" || strings.HasPrefix(p, `\`) { // no ref; C:\... is a Windows path
		return "", file
	}
	return r, p
}

// FingerprintKey names mcpolicy's partial fingerprint in a SARIF result.
// Its value is Fingerprint's hash and, after a colon, the occurrence of that
// hash in the run (1, then 2 for a second identical finding...), the shape of
// GitHub's own primaryLocationLineHash.
const FingerprintKey = "mcpolicyFinding/v1"

// positions in a message (file:line:col), which move with every edit above.
var positionRE = regexp.MustCompile(`:[0-9]+:[0-9]+\b`)

// Fingerprint is a finding's identity across commits: a hash of its rule,
// its file (a grant that is gone: the old file, without the git ref it was
// read at), its server, its verdict and its message with whitespace
// collapsed and every file:line:col position reduced to its file. Not
// the line: a finding that moves when lines are added above it is the
// same alert, and two findings on one line are two.
func Fingerprint(f Finding) string {
	file := f.Pos.File
	if file == "" {
		_, file = splitRef(f.Against.File)
	}
	msg := strings.Join(strings.Fields(positionRE.ReplaceAllString(f.Message, "")), " ")
	h := sha256.New()
	for _, s := range []string{f.Rule, file, f.Server, f.Verdict, msg} {
		io.WriteString(h, s)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// location is a position as a SARIF location: its file a URI reference
// (percent-encoded; "./" before a first segment with a colon, which would
// read as a scheme).
func location(p position.Pos, id *int) sarifLocation {
	var l sarifLocation
	l.ID = id
	l.PhysicalLocation.ArtifactLocation.URI = (&url.URL{Path: filepath.ToSlash(p.File)}).String()
	l.PhysicalLocation.Region.StartLine = max(p.Line, 1)
	l.PhysicalLocation.Region.StartColumn = max(p.Col, 1)
	return l
}

func sarifLevel(level string) string {
	if level == Info {
		return "note"
	}
	return level
}
