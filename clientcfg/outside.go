package clientcfg

import (
	"fmt"
	"path/filepath"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/runtime/launch"
)

// EnvFileOutsideProject refuses an env file that lies in a grant of any
// server of the project, not only the one the entry starts: the file holds
// every server's values, so a server that reads it (a read-only grant) has
// them all, and one that writes it (a read-write grant) chooses what the
// next launch of each gets. The error names the file, the server and the
// grant. (The launcher checks only the plan it starts.)
func EnvFileOutsideProject(plans []*compiler.Plan, file, root, home string) error {
	if !filepath.IsAbs(file) {
		return fmt.Errorf("--env-file %q: not an absolute path", file)
	}
	return outsideProject(plans, file, root, home, outsideWords{
		what:   "the env file",
		read:   "read every server's secrets in it",
		write:  "read every server's secrets in it, and rewrite what the next launch of each gets",
		rather: "pass --env-file with a path outside every grant of the project",
	})
}

// BackupsOutsideProject refuses a backups folder (client --write's, see
// Save) in a grant of any server of the project: the backups are copies
// of client configs, tokens included, and what lies there --restore puts
// back.
func BackupsOutsideProject(plans []*compiler.Plan, dir, root, home string) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("%s: nowhere to keep a backup: set HOME or XDG_STATE_HOME (an absolute path)", dir)
	}
	return outsideProject(plans, dir, root, home, outsideWords{
		what:   "the backups folder",
		read:   "read the tokens of the client configs backed up there",
		write:  "read the tokens of the client configs backed up there, and plant what --restore puts back",
		rather: "set XDG_STATE_HOME to a folder outside every grant of the project",
	})
}

// CredentialsOutsideProject refuses a file in a grant of any server of
// the project for what mcpolicy credentials prints: the values and the
// session CA's key, which no server may read.
func CredentialsOutsideProject(plans []*compiler.Plan, file, root, home string) error {
	words := "read the credentials' values and the session CA's key in it"
	return outsideProject(plans, file, root, home, outsideWords{
		what:   "the output",
		read:   words,
		write:  words,
		rather: "pipe it to kubectl apply -f -, or write it outside every grant of the project",
	})
}

// outsideWords say what a file outside every grant is, and what a server
// that is given it could do.
type outsideWords struct{ what, read, write, rather string }

func outsideProject(plans []*compiler.Plan, file, root, home string, w outsideWords) error {
	m := compiler.Machine{ProjectRoot: root, Home: home}
	f := filepath.Clean(file)
	if g, in := launch.InsideAny(f, []string{root}); in {
		return fmt.Errorf("%s %s lies inside the project %s, which its servers are given: %s", w.what, f, g, w.rather)
	}
	for _, p := range plans {
		for _, mt := range p.Mounts {
			g := filepath.Clean(m.Resolve(mt.Source))
			if _, in := launch.InsideAny(f, []string{g}); !in {
				continue
			}
			how, could := "read-only", w.read
			if mt.Mode == compiler.ReadWrite {
				how, could = "read-write", w.write
			}
			return fmt.Errorf("%s %s lies inside %s, which server %q is given %s: it could %s; %s's servers", w.what, f, g, p.Server, how, could, w.rather)
		}
		if g, in := launch.InsideAny(f, p.Runtime.ReadOnly); in {
			return fmt.Errorf("%s %s lies inside %s, which server %q is given read-only: it could %s; %s's servers", w.what, f, g, p.Server, w.read, w.rather)
		}
	}
	return nil
}
