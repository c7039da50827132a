package entry

import "github.com/mcpolicy/mcpolicy/clientcfg"

// Loads reports whether c's client loads src as its file (strict JSON,
// JSONC or TOML, as Merge reads it): --restore puts back no backup that
// does not.
func Loads(c *clientcfg.Client, file string, src []byte) error {
	if c.Key == "" {
		_, err := decodeTOML(file, src[len(bomOf(src)):])
		return err
	}
	body := src[len(bomOf(src)):]
	if len(body) == 0 {
		return nil
	}
	_, err := clientcfg.ReadAsClient(c, file, body)
	return err
}

func bomOf(src []byte) []byte {
	if len(src) >= len(bom) && string(src[:len(bom)]) == string(bom) {
		return bom
	}
	return nil
}

// bom is UTF-8's byte-order mark: a file that starts with one is read past
// it, and keeps it.
var bom = []byte("\xef\xbb\xbf")
