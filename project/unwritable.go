package project

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/mcpolicy/mcpolicy/compiler"
)

// UnwritableGrant is a read-write grant the server's user cannot write on
// this machine: a grant in name only, which the server meets as EACCES.
type UnwritableGrant struct {
	Server       string
	Source       string // the host folder or file
	User         compiler.User
	Owner, Group uint32
	Mode         fs.FileMode
}

func (u UnwritableGrant) String() string {
	return fmt.Sprintf("server %q runs as %s, and its read-write grant %s (owner %d:%d, mode %04o) is not writable by it: the server gets EACCES there. Give it the folder (chown -R %d:%d %s), or run it as you (user: \"invoker\", a counted grant)",
		u.Server, u.User, u.Source, u.Owner, u.Group, u.Mode.Perm(), u.User.UID, u.User.GID, u.Source)
}

// UnwritableGrants lists the read-write grants whose sources exist here and
// that the plan's user cannot write. It matters where the server runs as
// that user: a launcher started by root (bwrap, Landlock) and rootful
// docker; an unprivileged launcher maps the plan's user to its own. A
// server run as root or as the invoker is not checked.
func UnwritableGrants(plans []*compiler.Plan, m compiler.Machine) []UnwritableGrant {
	var out []UnwritableGrant
	for _, p := range plans {
		if p.User.Invoker || p.User.Root() {
			continue
		}
		for _, mt := range p.Mounts {
			if mt.Mode != compiler.ReadWrite {
				continue
			}
			src := m.Resolve(mt.Source)
			fi, err := os.Stat(src)
			if err != nil {
				continue // missing: build and the launcher say so
			}
			st, ok := fi.Sys().(*syscall.Stat_t)
			if !ok || writableBy(fi.Mode(), st.Uid, st.Gid, p.User) {
				continue
			}
			out = append(out, UnwritableGrant{Server: p.Server, Source: src, User: p.User, Owner: st.Uid, Group: st.Gid, Mode: fi.Mode()})
		}
	}
	return out
}

// writableBy: the permission bits that apply to the user (owner, else
// group, else others) allow writing. ACLs and capabilities aside.
func writableBy(mode fs.FileMode, uid, gid uint32, u compiler.User) bool {
	switch {
	case uid == uint32(u.UID):
		return mode&0o200 != 0
	case gid == uint32(u.GID):
		return mode&0o020 != 0
	}
	return mode&0o002 != 0
}
