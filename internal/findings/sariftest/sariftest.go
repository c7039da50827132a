// Package sariftest validates SARIF documents against the official SARIF
// 2.1.0 JSON schema, for tests (only test files import it).
//
// sarif-schema-2.1.0.json is the OASIS schema (errata 01) as published in
// the specification's repository, byte for byte:
//
//	https://github.com/oasis-tcs/sarif-spec/blob/a560296ca8c921f3bdb8d4a8db57ab83dae968a7/sarif-2.1/schema/sarif-schema-2.1.0.json
//	sha256 c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e
//
// (the last commit to touch the file, 2024-05-02; the same bytes gosec
// ships as report/sarif/testdata/sarif-schema-2.1.0.json). Schema checks
// the digest, so a changed copy fails every test that validates with it.
package sariftest

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

//go:embed sarif-schema-2.1.0.json
var schemaJSON []byte

const (
	schemaSHA256 = "c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e"
	schemaID     = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)

var compiled = sync.OnceValues(func() (*jsonschema.Schema, error) {
	if sum := sha256.Sum256(schemaJSON); hex.EncodeToString(sum[:]) != schemaSHA256 {
		return nil, fmt.Errorf("sarif-schema-2.1.0.json has sha256 %x, not the official schema's %s", sum, schemaSHA256)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		return nil, err
	}
	if id, _ := doc.(map[string]any)["id"].(string); id != schemaID {
		return nil, fmt.Errorf("schema id %q, want %q", id, schemaID)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource(schemaID, doc); err != nil {
		return nil, err
	}
	return c.Compile(schemaID)
})

// Schema is the official SARIF 2.1.0 schema, compiled (formats asserted).
func Schema(t testing.TB) *jsonschema.Schema {
	t.Helper()
	s, err := compiled()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Validate reports whether a document is SARIF 2.1.0 as the schema says.
func Validate(t testing.TB, doc []byte) error {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return err
	}
	return Schema(t).Validate(v)
}
