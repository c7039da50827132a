package launch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// decodeArtefact reads a bwrap spec or a Landlock ruleset, refusing a field
// this launcher does not know: one written by a newer mcpolicy (hidden
// paths, a fixed top level...) asks for a restriction this launcher would
// otherwise skip without a word, starting the server with less taken away
// than the reviewed plan says.
func decodeArtefact(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return fmt.Errorf("it holds the field %s, which this mcpolicy-launch does not know (written by a newer mcpolicy?): refusing to start without what it asks for; install mcpolicy and mcpolicy-launch from the same version (make install)", f)
		}
		return err
	}
	return nil
}
