package main

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// SBOM is the release's CycloneDX document (JSON), from each binary's
// build info (what the Go linker recorded it links): the module released,
// then every binary of every platform with its SHA-256, the Go standard
// library and every module a binary links, with its go.sum hash, and which
// binary depends on which. Its serial number and timestamp follow from the
// commit, so a rebuild writes the same bytes.
func SBOM(r *Result) ([]byte, error) {
	bom := cdx.NewBOM()
	sum := sha256.Sum256([]byte(module + "@" + r.Version + " " + r.Commit))
	sum[6] = sum[6]&0x0f | 0x80 // RFC 9562 UUIDv8: custom, here the commit's and version's hash
	sum[8] = sum[8]&0x3f | 0x80
	bom.SerialNumber = fmt.Sprintf("urn:uuid:%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16])
	root := purl(module, r.Version)
	bom.Metadata = &cdx.Metadata{
		Timestamp: r.Time,
		Tools: &cdx.ToolsChoice{Components: &[]cdx.Component{{
			Type: cdx.ComponentTypeApplication, Name: module + "/tools/release", Version: r.Version,
			Description: "mcpolicy's release builder (make release), with github.com/CycloneDX/cyclonedx-go",
		}}},
		Component: &cdx.Component{
			BOMRef: root, Type: cdx.ComponentTypeApplication, Name: module, Version: r.Version, PackageURL: root,
			Description: "Confinement for local MCP servers, as a reviewed artefact",
			Properties:  &[]cdx.Property{{Name: "vcs.revision", Value: r.Commit}, {Name: "vcs.time", Value: r.Time}},
		},
	}
	var comps []cdx.Component
	var deps []cdx.Dependency
	var bins []string
	libs := map[string]cdx.Component{}
	for _, b := range r.Binaries {
		ref := fmt.Sprintf("%s %s/%s", b.Name, b.GOOS, b.GOARCH)
		bins = append(bins, ref)
		comps = append(comps, cdx.Component{
			BOMRef: ref, Type: cdx.ComponentTypeApplication, Name: b.Name, Version: r.Version,
			Hashes: &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: b.SHA256}},
			Properties: &[]cdx.Property{
				{Name: "GOOS", Value: b.GOOS}, {Name: "GOARCH", Value: b.GOARCH},
				{Name: "archive", Value: b.Archive}, {Name: "go", Value: b.Info.GoVersion},
				{Name: "package", Value: b.Info.Path},
			},
		})
		std := purl("std", b.Info.GoVersion)
		libs[std] = cdx.Component{BOMRef: std, Type: cdx.ComponentTypeLibrary, Name: "std", Version: b.Info.GoVersion, PackageURL: std,
			Description: "the Go standard library and runtime"}
		on := []string{std}
		for _, d := range b.Info.Deps {
			if d.Replace != nil {
				d = d.Replace
			}
			p := purl(d.Path, d.Version)
			c := cdx.Component{BOMRef: p, Type: cdx.ComponentTypeLibrary, Name: d.Path, Version: d.Version, PackageURL: p}
			if d.Sum != "" {
				c.Properties = &[]cdx.Property{{Name: "go.sum", Value: d.Sum}}
			}
			libs[p] = c
			on = append(on, p)
		}
		slices.Sort(on)
		deps = append(deps, cdx.Dependency{Ref: ref, Dependencies: &on})
	}
	refs := make([]string, 0, len(libs))
	for p := range libs {
		refs = append(refs, p)
	}
	slices.Sort(refs)
	for _, p := range refs {
		comps = append(comps, libs[p])
	}
	deps = append([]cdx.Dependency{{Ref: root, Dependencies: &bins}}, deps...)
	bom.Components, bom.Dependencies = &comps, &deps
	var buf bytes.Buffer
	if err := cdx.NewBOMEncoder(&buf, cdx.BOMFileFormatJSON).SetPretty(true).SetEscapeHTML(false).Encode(bom); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// purl is a Go module's package URL; "/" in a path stays as it is (the
// purl spec's golang type: the namespace holds the path's head).
func purl(path, version string) string {
	return "pkg:golang/" + path + "@" + strings.ReplaceAll(version, "+", "%2B")
}
