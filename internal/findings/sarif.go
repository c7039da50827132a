package findings

import (
	"encoding/json"
	"io"

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
		Tool    sarifTool     `json:"tool"`
		Results []sarifResult `json:"results"`
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
		ID                   string       `json:"id"`
		Name                 string       `json:"name,omitempty"`
		ShortDescription     sarifText    `json:"shortDescription"`
		FullDescription      *sarifText   `json:"fullDescription,omitempty"`
		DefaultConfiguration sarifDefault `json:"defaultConfiguration"`
		Help                 *sarifText   `json:"help,omitempty"`
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
// change the grant's old position as a related location.
func writeSARIF(w io.Writer, d Doc) error {
	run := sarifRun{Results: []sarifResult{}, Tool: sarifTool{sarifDriver{
		InformationURI: "https://github.com/mcpolicy/mcpolicy", Name: d.Tool, Rules: []sarifRule{}, Version: d.Version}}}
	if run.Tool.Driver.Name == "" {
		run.Tool.Driver.Name = "mcpolicy"
	}
	for _, r := range d.Rules {
		sr := sarifRule{ID: r.ID, Name: r.Name, ShortDescription: sarifText{r.Purpose}, DefaultConfiguration: sarifDefault{sarifLevel(r.Level)}}
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
	for _, f := range d.Findings {
		var ri *int
		if i, ok := index[f.Rule]; ok {
			ri = &i
		}
		res := sarifResult{RuleID: f.Rule, RuleIndex: ri, Level: sarifLevel(f.Level), Message: sarifText{f.label()},
			Locations: []sarifLocation{}}
		if f.Pos.File != "" || f.Against.File == "" { // a grant that is gone has no place in the new version
			res.Locations = append(res.Locations, location(f.Pos, nil))
		}
		if f.Against.File != "" {
			id := 1
			res.RelatedLocations = []sarifLocation{location(f.Against, &id)}
			res.RelatedLocations[0].Message = &sarifText{"before"}
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

func location(p position.Pos, id *int) sarifLocation {
	var l sarifLocation
	l.ID = id
	l.PhysicalLocation.ArtifactLocation.URI = p.File
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
