package importer

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcpolicy/mcpolicy/internal/hostfile"
	"github.com/mcpolicy/mcpolicy/runtime/launch"
)

// PolicyDir is where import writes, below the project folder: one file
// per server, beside any mcpolicy.cue the project has.
const PolicyDir = "mcpolicy.d"

// PolicyFile is the file a server's imported policy goes to.
func PolicyFile(dir, server string) string {
	return filepath.Join(dir, PolicyDir, server+".cue")
}

// Written says what WritePolicy did.
type Written struct {
	File   string
	Status string // "wrote", "unchanged", "replaced", or "exists" (not written: --force)
	Backup string // where the replaced bytes went
}

// WritePolicy writes a server's policy atomically: a new file, nothing
// for the same bytes, and over other bytes only with force, the old ones
// copied into backups (a folder outside the project) first. untrusted
// are the folders a server may write (hostfile).
func WritePolicy(dir, server string, data []byte, force bool, backups string, untrusted []string) (Written, error) {
	w := Written{File: PolicyFile(dir, server)}
	old, err := hostfile.ReadFile(w.File, untrusted)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		w.Status = "wrote"
	case err != nil:
		return w, err
	case bytes.Equal(old, data):
		w.Status = "unchanged"
		return w, nil
	case !force:
		w.Status = "exists"
		return w, nil
	default:
		if !filepath.IsAbs(backups) {
			return w, fmt.Errorf("%s: nowhere to keep a backup of it: set HOME or XDG_STATE_HOME", w.File)
		}
		w.Backup = filepath.Join(backups, time.Now().UTC().Format("20060102T150405.000000000Z")+"-"+server+".cue")
		if err := hostfile.WriteFile(w.Backup, old, 0o600, nil); err != nil {
			return w, err
		}
		w.Status = "replaced"
	}
	return w, hostfile.WriteFile(w.File, data, 0o644, untrusted)
}

// SecretsAdded says what AddSecrets did with each secret.
type SecretsAdded struct {
	Added []string // names written to the file
	Same  []string // already there with this value
	Kept  []string // already there with another value: the file's is kept
}

// AddSecrets adds NAME=value lines to the env file the launcher reads
// (launch.EnvFile) for the secrets it does not hold yet, keeping every
// byte it had; the file is written atomically, mode 600. A file the
// launcher would refuse (a symlink, a line it cannot parse) is not
// touched. from says where the values came from, for the comment above
// them.
func AddSecrets(file string, secrets []Secret, from string) (SecretsAdded, error) {
	var r SecretsAdded
	if len(secrets) == 0 {
		return r, nil
	}
	if fi, err := os.Lstat(file); err == nil && !fi.Mode().IsRegular() {
		return r, fmt.Errorf("the env file %s is not a regular file (a symlink?): the launcher refuses it, and import does not write through it", file)
	}
	// Two imports at once take turns: each reads what the other wrote, so
	// neither drops the other's lines.
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return r, err
	}
	unlock, err := hostfile.LockFolder(filepath.Dir(file))
	if err != nil {
		return r, err
	}
	defer unlock()
	old, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return r, err
	}
	have, err := launch.ParseEnvFile(file, old)
	if err != nil {
		return r, fmt.Errorf("%w: import adds nothing to a file the launcher cannot read; fix it, then import again", err)
	}
	var add strings.Builder
	for _, s := range secrets {
		v, ok := have[s.Name]
		switch {
		case ok && v == s.Value:
			r.Same = append(r.Same, s.Name)
		case ok:
			r.Kept = append(r.Kept, s.Name)
		default:
			line, err := envLine(s)
			if err != nil {
				return r, err
			}
			add.WriteString(line)
			have[s.Name] = s.Value
			r.Added = append(r.Added, s.Name)
		}
	}
	if add.Len() == 0 {
		return r, nil
	}
	out := append([]byte{}, old...)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	out = append(out, "# added by mcpolicy import from "+from+"\n"+add.String()...)
	// An editor that saved the file since it was read (it takes no lock)
	// would lose its change to the rename: refuse, and say so.
	if now, err := os.ReadFile(file); !bytes.Equal(now, old) && (err == nil || !errors.Is(err, fs.ErrNotExist) || len(old) > 0) {
		return SecretsAdded{}, fmt.Errorf("the env file %s changed while import read it (an editor saved it?): nothing written; import again", file)
	}
	return r, hostfile.WriteFile(file, out, 0o600, nil)
}

// envLine is NAME=value as launch.ParseEnvFile reads it back: quoted when
// blanks at its ends or a quote would otherwise change it.
func envLine(s Secret) (string, error) {
	if strings.ContainsAny(s.Value, "\r\n") {
		return "", fmt.Errorf("%s: its value holds a line break, which an env file cannot hold: put it in the env file yourself", s.Name)
	}
	v := s.Value
	if v != strings.TrimSpace(v) || strings.HasPrefix(v, `"`) || strings.HasPrefix(v, `'`) {
		q := `"`
		if strings.Contains(v, `"`) {
			q = `'`
		}
		if strings.Contains(v, q) {
			return "", fmt.Errorf("%s: its value holds both kinds of quotes and blanks at its ends: put it in the env file yourself", s.Name)
		}
		v = q + v + q
	}
	return s.Name + "=" + v + "\n", nil
}
