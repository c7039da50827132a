module github.com/mcpolicy/mcpolicy/tools/release

go 1.26.8

require github.com/CycloneDX/cyclonedx-go v0.12.0
