package launch

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// imageConfig is what the launcher reads of an image.
type imageConfig struct {
	Volumes    map[string]any
	Entrypoint []string
	Cmd        []string
}

// imageInfo is an image as the engine holds it: its ID (sha256:HEX) and
// its configuration. The container is run by that ID, so the image run is
// the one read, whatever a tag names in between.
type imageInfo struct {
	ID     string
	Config imageConfig
}

// inspect reads image from the engine's own store without starting its
// CLI where it can — docker's API on its socket, podman's image store on
// disk, for the engine's own CLI (native) alone — and asks `ENGINE image
// inspect` otherwise.
func inspect(engine string, podman, native bool, image string) (*imageInfo, error) {
	var info *imageInfo
	switch {
	case native && podman:
		info = podmanStoreImage(image)
	case native:
		info = dockerAPIImage(image)
	}
	if info != nil {
		return info, nil
	}
	return inspectCLI(engine, podman, image)
}

// inspectCLI asks `ENGINE image inspect`. The ID's field is .Id in
// docker's template, .ID in podman's.
func inspectCLI(engine string, podman bool, image string) (*imageInfo, error) {
	format := `{"ID":{{json .Id}},"Config":{{json .Config}}}`
	if podman {
		format = `{"ID":{{json .ID}},"Config":{{json .Config}}}`
	}
	out, err := exec.Command(engine, "image", "inspect", "--format", format, image).Output()
	if err != nil {
		var msg string
		if ee, ok := err.(*exec.ExitError); ok {
			msg = strings.TrimSpace(string(ee.Stderr))
		}
		name := filepath.Base(engine)
		return nil, fmt.Errorf("cannot inspect image %s with %s (%v %s): its VOLUMEs must be masked and its entrypoint known before it runs; hint: pull or build it first (`%s pull %s`); a server whose program comes from a mount can run in an empty image: `tar -cf - -T /dev/null | %s import - %s`", image, engine, err, msg, name, image, name, image)
	}
	var info imageInfo
	if err := json.Unmarshal(bytes.TrimSpace(out), &info); err != nil {
		return nil, fmt.Errorf("image %s: reading its configuration: %v", image, err)
	}
	id, ok := imageID(info.ID)
	if !ok {
		return nil, fmt.Errorf("image %s: %s gives no image ID (%q): the container must run the very image inspected", image, engine, info.ID)
	}
	info.ID = id
	return &info, nil
}

// imageID is an engine's image ID as sha256:HEX (podman leaves the
// prefix out).
func imageID(id string) (string, bool) {
	h := strings.TrimPrefix(id, "sha256:")
	if len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
		return "", false
	}
	return "sha256:" + h, true
}

// plainRef reports whether image is a reference the fast paths can read:
// a name, an optional tag, no digest, only the characters references use
// (it goes into a URL path and is compared with the store's names).
func plainRef(image string) bool {
	if image == "" || strings.Contains(image, "@") || strings.Contains(image, "..") || strings.HasPrefix(image, "/") {
		return false
	}
	for _, c := range image {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._-/:", c)) {
			return false
		}
	}
	return true
}

// dockerAPITimeout bounds the API request: a socket that does not answer
// sends the launcher to the CLI, which says why.
const dockerAPITimeout = 10 * time.Second

// dockerAPIImage asks the docker daemon the CLI would ask (DOCKER_HOST, a
// context) for image, on its unix socket: one HTTP request instead of a
// CLI start. nil when it cannot: another kind of host, a context, a
// reference it does not take, any error (the CLI is asked then).
func dockerAPIImage(image string) *imageInfo {
	sock := dockerSocket(os.Getenv)
	if sock == "" || !plainRef(image) {
		return nil
	}
	c, err := net.DialTimeout("unix", sock, dockerAPITimeout)
	if err != nil {
		return nil
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(dockerAPITimeout))
	if _, err := fmt.Fprintf(c, "GET /images/%s/json HTTP/1.0\r\nHost: docker\r\n\r\n", image); err != nil {
		return nil
	}
	body, ok := httpOK(bufio.NewReader(c))
	if !ok {
		return nil
	}
	var info struct {
		ID     string `json:"Id"`
		Config imageConfig
	}
	if err := json.Unmarshal(body, &info); err != nil {
		return nil
	}
	id, ok := imageID(info.ID)
	if !ok {
		return nil
	}
	return &imageInfo{ID: id, Config: info.Config}
}

// httpOK reads an HTTP/1.0 response: the body if the status is 200 and
// it is not chunked.
func httpOK(r *bufio.Reader) ([]byte, bool) {
	status, err := r.ReadString('\n')
	if f := strings.Fields(status); err != nil || len(f) < 2 || !strings.HasPrefix(f[0], "HTTP/1.") || f[1] != "200" {
		return nil, false
	}
	for {
		h, err := r.ReadString('\n')
		if err != nil {
			return nil, false
		}
		h = strings.TrimRight(h, "\r\n")
		if h == "" {
			break
		}
		if k, _, _ := strings.Cut(h, ":"); strings.EqualFold(strings.TrimSpace(k), "Transfer-Encoding") {
			return nil, false
		}
	}
	body, err := io.ReadAll(io.LimitReader(r, 16<<20))
	return body, err == nil
}

// dockerSocket is the unix socket the docker CLI would use, or "" when
// the CLI would go elsewhere or decide by what the launcher does not read
// (a tcp:// or ssh:// host, a context other than the default, TLS).
func dockerSocket(getenv func(string) string) string {
	if getenv("DOCKER_CONTEXT") != "" && getenv("DOCKER_CONTEXT") != "default" || getenv("DOCKER_TLS_VERIFY") != "" || getenv("DOCKER_API_VERSION") != "" {
		return ""
	}
	if h := getenv("DOCKER_HOST"); h != "" {
		p, ok := strings.CutPrefix(h, "unix://")
		if !ok || !filepath.IsAbs(p) {
			return ""
		}
		return p
	}
	dir := getenv("DOCKER_CONFIG")
	if dir == "" {
		home := getenv("HOME")
		if home == "" {
			return ""
		}
		dir = filepath.Join(home, ".docker")
	}
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil && !os.IsNotExist(err) {
		return ""
	}
	if err == nil {
		var cfg struct{ CurrentContext string }
		if json.Unmarshal(b, &cfg) != nil || cfg.CurrentContext != "" && cfg.CurrentContext != "default" {
			return ""
		}
	}
	return "/var/run/docker.sock"
}

// podmanStoreImage reads image from podman's image store
// (containers/storage, as podman run reads it): its ID from the store's
// index, its configuration from the blob whose digest is that ID — a blob
// that does not hash to the ID is not read. nil when the store cannot be
// read with certainty: a storage.conf, a short or digest reference, a
// name the index lacks (the CLI is asked then).
func podmanStoreImage(image string) *imageInfo {
	dir := podmanImages(os.Getenv, os.Geteuid())
	if dir == "" || !plainRef(image) {
		return nil
	}
	name, ok := fullName(image)
	if !ok {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(dir, "images.json"))
	if err != nil {
		return nil
	}
	var index []struct {
		ID    string   `json:"id"`
		Names []string `json:"names"`
	}
	if json.Unmarshal(b, &index) != nil {
		return nil
	}
	for _, im := range index {
		for _, n := range im.Names {
			if n == name {
				return podmanConfig(dir, im.ID)
			}
		}
	}
	return nil
}

// podmanConfig reads the configuration blob of image id (HEX), checking
// that it hashes to the ID.
func podmanConfig(dir, id string) *imageInfo {
	full, ok := imageID(id)
	if !ok {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(dir, id, "="+base64.StdEncoding.EncodeToString([]byte(full))))
	if err != nil {
		return nil
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != id {
		return nil
	}
	var blob struct{ Config imageConfig }
	if json.Unmarshal(b, &blob) != nil {
		return nil
	}
	return &imageInfo{ID: full, Config: blob.Config}
}

// podmanImages is the folder of podman's image index: root's store or
// the user's, with its graph driver's images in it, as the default or a
// system storage.conf places them; "" when the launcher cannot be sure
// (CONTAINERS_STORAGE_CONF, a user's storage.conf, a separate image store,
// a path with variables, no single driver's index).
func podmanImages(getenv func(string) string, euid int) string {
	if getenv("CONTAINERS_STORAGE_CONF") != "" {
		return ""
	}
	root := "/var/lib/containers/storage"
	if euid != 0 {
		home := getenv("HOME")
		if home == "" {
			return ""
		}
		data, cfg := getenv("XDG_DATA_HOME"), getenv("XDG_CONFIG_HOME")
		if data == "" {
			data = filepath.Join(home, ".local", "share")
		}
		if cfg == "" {
			cfg = filepath.Join(home, ".config")
		}
		if _, err := os.Lstat(filepath.Join(cfg, "containers", "storage.conf")); !os.IsNotExist(err) {
			return ""
		}
		root = filepath.Join(data, "containers", "storage")
	}
	driver := ""
	for _, c := range []string{"/etc/containers/storage.conf", "/usr/share/containers/storage.conf"} {
		b, err := os.ReadFile(c)
		if os.IsNotExist(err) {
			continue
		}
		kv, ok := storageConf(b)
		if err != nil || !ok || kv["imagestore"] != "" {
			return ""
		}
		driver = kv["driver"]
		if g := kv["graphroot"]; euid == 0 && g != "" {
			root = g
		} else if r := kv["rootless_storage_path"]; euid != 0 && r != "" {
			root = r
		}
		break
	}
	if strings.Contains(root, "$") || !filepath.IsAbs(root) {
		return ""
	}
	drivers := []string{"overlay", "vfs", "btrfs", "zfs"}
	if driver != "" {
		drivers = []string{driver}
	}
	var found []string
	for _, d := range drivers {
		if _, err := os.Stat(filepath.Join(root, d+"-images", "images.json")); err == nil {
			found = append(found, filepath.Join(root, d+"-images"))
		}
	}
	if len(found) != 1 {
		return ""
	}
	return found[0]
}

// storageConf reads the keys of a storage.conf's [storage] table that
// place the image store; ok is false for one of them that is not a plain
// string.
func storageConf(b []byte) (map[string]string, bool) {
	kv := map[string]string{}
	table := ""
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if line[0] == '[' {
			raw, _, _ := strings.Cut(strings.TrimLeft(line, "["), "]")
			// ["storage"] is [storage] to TOML: read only the plain spelling.
			if table = bareKey(raw); table == "storage" && strings.TrimSpace(raw) != "storage" {
				return nil, false
			}
			continue
		}
		k, v, found := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		// A dotted or quoted key (storage.graphroot, "graphroot") or an
		// inline table (storage = {...}) places the store as podman reads
		// it, not as this reader does.
		if full := strings.TrimPrefix(table+"."+bareKey(k), "."); found && (full == "storage" || storeKeys[full] && (table != "storage" || k != bareKey(k))) {
			return nil, false
		}
		if table != "storage" || !found {
			continue
		}
		switch k {
		case "driver", "graphroot", "rootless_storage_path", "imagestore":
			s, ok := tomlString(strings.TrimSpace(v))
			if !ok {
				return nil, false
			}
			kv[k] = s
		}
	}
	return kv, true
}

// storeKeys are the [storage] keys that place the image store.
var storeKeys = map[string]bool{"storage.driver": true, "storage.graphroot": true, "storage.rootless_storage_path": true, "storage.imagestore": true}

// bareKey is a TOML key or table name without its quotes and the spaces
// around its dots, as TOML reads it where it has no escapes.
func bareKey(k string) string {
	return strings.NewReplacer(`"`, "", "'", "", " ", "", "\t", "").Replace(strings.TrimSpace(k))
}

// tomlString is a TOML basic or literal string without escapes, a
// comment allowed after it.
func tomlString(v string) (string, bool) {
	if len(v) < 2 || v[0] != '"' && v[0] != '\'' {
		return "", false
	}
	s, rest, ok := strings.Cut(v[1:], v[:1])
	if rest = strings.TrimSpace(rest); !ok || strings.Contains(s, "\\") || rest != "" && rest[0] != '#' {
		return "", false
	}
	return s, true
}

// fullName is a reference as podman's store names it (DOMAIN/PATH:TAG,
// :latest if it has no tag); ok is false for a short name, which podman
// resolves by its registries.conf.
func fullName(image string) (string, bool) {
	domain, rest, ok := strings.Cut(image, "/")
	if !ok || !(strings.ContainsAny(domain, ".:") || domain == "localhost") || rest == "" {
		return "", false
	}
	if strings.ToLower(image) != image {
		return "", false
	}
	if domain == "docker.io" && !strings.Contains(rest, "/") {
		rest = "library/" + rest
	}
	if last := rest[strings.LastIndex(rest, "/")+1:]; !strings.Contains(last, ":") {
		rest += ":latest"
	}
	return domain + "/" + rest, true
}
