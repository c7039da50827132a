package clientcfg

// Loads reports whether c's client loads src as its file (strict JSON,
// JSONC or TOML, as Merge reads it): --restore puts back no backup that
// does not.
func Loads(c *Client, file string, src []byte) error {
	if c.Key == "" {
		_, err := decodeTOML(file, src[len(bomOf(src)):])
		return err
	}
	body := src[len(bomOf(src)):]
	if len(body) == 0 {
		return nil
	}
	_, err := readAsClient(c, file, body)
	return err
}

func bomOf(src []byte) []byte {
	if len(src) >= len(bom) && string(src[:len(bom)]) == string(bom) {
		return bom
	}
	return nil
}
