package toolrelay

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"
)

// topIDs are the ids of each top-level object of a line of valid JSON
// values, as a parser reads them, duplicates included.
func topIDs(line []byte) ([]string, bool) {
	d := json.NewDecoder(bytes.NewReader(line))
	var ids []string
	for {
		var v json.RawMessage
		if err := d.Decode(&v); err == io.EOF {
			return ids, true
		} else if err != nil {
			return nil, false
		}
		if v[0] != '{' {
			return nil, false // arrays and scalars: the scanner stops or skips
		}
		kd := json.NewDecoder(bytes.NewReader(v))
		kd.Token()
		for kd.More() {
			k, _ := kd.Token()
			var val json.RawMessage
			kd.Decode(&val)
			if k == "id" {
				ids = append(ids, string(compact(val)))
			}
		}
	}
}

// FuzzScanner: on a line of JSON objects the scanner reports the ids a
// parser reads, each, whatever the escapes and nesting, fed whole or a
// byte at a time.
func FuzzScanner(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"id":2,"tools":[{"id":3}]}}`,
		`{"result":{"x":"\"id\":9 }"},"jsonrpc":"2.0","id":"a\"b"}`,
		`{"\u0069d":7} {"id":[1,{"id":2}], "id":null}`,
		`{"i\u0064" : { "n" : 1 } }`,
		` {"a":[{"b":"}"}],"id":-1.5e3}` + "\n",
		`{"id":true}{"id":"\\"}`,
		`{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		want, ok := topIDs(line)
		if !ok {
			return
		}
		for _, step := range []int{len(line) + 1, 1} {
			var got []string
			s := scanner{onID: func(v []byte, over bool, _ int64) {
				if !over {
					got = append(got, string(compact(v)))
				} else {
					got = append(got, "<over>")
				}
			}}
			for i := 0; i < len(line); i += step {
				s.feed(line[i:min(i+step, len(line))])
			}
			for i := range got {
				if got[i] == "<over>" && i < len(want) && len(want[i]) >= maxID {
					got[i] = want[i]
				}
			}
			if len(got) != len(want) {
				t.Fatalf("%q: the scanner read ids %q, a parser %q", line, got, want)
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("%q: the scanner read ids %q, a parser %q", line, got, want)
				}
			}
		}
	})
}
