package importer

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpolicy/mcpolicy/clientcfg"
	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/internal/bytesize"
)

// container imports a `docker run` / `podman run` entry from the plan lint
// read off its flags: the image and its command, each -v/--mount a mount
// (source and target as written, the mode kept), the first --tmpfs the
// scratch, each -e an env grant; what the engine allowed by default (its
// network, root, capabilities, a writable root) is taken away, as every
// policy does, and said.
func (o Options) container(l *clientcfg.Launch, s *Server) {
	t := l.Target
	p := t.Plan
	if p == nil || p.Image == "" {
		s.Skipped = "a " + t.Launcher + " command line that runs no image import can read"
		return
	}
	if l.SecretInArgv() && !secretsOnlyInEnv(l) {
		s.Skipped = "a secret is written in its command line, past the image: import copies the command into the policy, so it imports none; pass it with -e NAME and the entry's env, then import again"
		return
	}
	d := o.newDraft(l, s)
	d.p.Description = "imported: " + t.Launcher + " run ... " + p.Image
	d.p.Image = p.Image
	d.p.Command = p.Command
	d.p.Workdir = p.Workdir
	if len(p.Command) > 0 {
		d.p.CommandWhy = []string{"The command the entry gave after the image."}
	}
	m := compiler.Machine{ProjectRoot: t.ProjectRoot, Home: o.Home}
	for _, mt := range p.Mounts {
		src := m.Resolve(mt.Source)
		if !filepath.IsAbs(src) {
			s.Notes = append(s.Notes, fmt.Sprintf("the mount %s -> %s: its source is not a path of this machine: not granted", mt.Source, mt.Target))
			continue
		}
		if d.wide(src, fmt.Sprintf("the %s mount of %s", t.Launcher, mt.Source)) {
			return
		}
		if fi, err := os.Stat(src); err == nil && fi.Mode()&fs.ModeSocket != 0 {
			// An engine's socket is the host's root; any socket, a service outside.
			s.Notes = append(s.Notes, fmt.Sprintf("the mount of the socket %s -> %s is dropped: a socket is a service outside the sandbox (an engine's is the host's root), which no imported policy grants", mt.Source, mt.Target))
			continue
		}
		how := "read-only (the entry's :ro)"
		if mt.Mode == compiler.ReadWrite {
			how = "read-write, as the entry mounted it (no :ro): make it read-only if the server only reads"
		}
		d.addMountAt(src, mt.Target, mt.Mode == compiler.ReadWrite, fmt.Sprintf("the entry's %s mount of %s, %s", t.Launcher, d.o.tilde(src), how))
	}
	if sc := p.Scratch; sc != nil {
		d.p.Scratch = &Scratch{Target: sc.Target, Size: bytesize.Format(sc.SizeBytes), Why: "the entry's --tmpfs " + sc.Target + ", bounded"}
	}
	d.containerEnv(l, p)
	if p.Network.Mode != "none" {
		s.Notes = append(s.Notes, "the container had the engine's network; the policy grants none: add network.allow entries (host:port) for what it must reach")
	}
	s.Notes = append(s.Notes, "taken away, as every policy does: the engine's root user (now 1000:1000; user: \"invoker\" to run as you), its capabilities, a writable root filesystem, new privileges")
	for _, f := range t.Flags {
		switch f.Kind {
		case readback.FlagPrivileged, readback.FlagCapAdd, readback.FlagHostNamespace, readback.FlagDockerSocket,
			readback.FlagSeccompUnconfined, readback.FlagAppArmorUnconf:
			s.Notes = append(s.Notes, fmt.Sprintf("the entry's %s (%s) is dropped: no policy grants it", f.Kind, f.Value))
		}
	}
	d.finish()
}

// secretsOnlyInEnv reports whether every secret lint flagged in the
// command line is the value of a -e NAME=VALUE (which goes to the env
// file, the policy naming NAME only).
func secretsOnlyInEnv(l *clientcfg.Launch) bool {
	vals := engineEnv(l)
	for _, f := range l.Target.Flags {
		if f.Kind != readback.FlagSecretInline {
			continue
		}
		if _, ok := vals[f.Value]; !ok {
			for _, w := range l.Argv {
				if w.Pos == f.Pos {
					return false
				}
			}
		}
	}
	return true
}

// engineEnv are the -e NAME=VALUE values the run's options set, up to
// the image.
func engineEnv(l *clientcfg.Launch) map[string]string {
	vals := map[string]string{}
	img := l.Target.ImagePos
	for i := 0; i < len(l.Argv); i++ {
		w := l.Argv[i]
		if w.Pos == img && img.Line != 0 && w.S == l.Target.Plan.Image {
			break
		}
		v := ""
		switch {
		case (w.S == "-e" || w.S == "--env") && i+1 < len(l.Argv):
			v = l.Argv[i+1].S
			i++
		case strings.HasPrefix(w.S, "--env="):
			v = strings.TrimPrefix(w.S, "--env=")
		case strings.HasPrefix(w.S, "-e") && len(w.S) > 2 && !strings.HasPrefix(w.S, "--"):
			v = strings.TrimPrefix(w.S[2:], "=")
		default:
			continue
		}
		if name, val, ok := strings.Cut(v, "="); ok {
			vals[name] = val
		}
	}
	return vals
}

// containerEnv grants the run's env names: a -e NAME=VALUE or the entry's
// env value as on the host (a secret to the env file, a constant a
// setenv value), a bare -e NAME as a name.
func (d *draft) containerEnv(l *clientcfg.Launch, p *compiler.Plan) {
	vals := engineEnv(l)
	set := map[string]clientcfg.EnvSetting{}
	for _, e := range l.Env {
		set[e.Name] = e
	}
	for _, g := range p.Env {
		e, inEntry := set[g.Name]
		if v, ok := vals[g.Name]; ok {
			e = clientcfg.EnvSetting{Name: g.Name, Value: v, HasValue: true, Secret: clientcfg.LooksLikeSecret(g.Name, v), Pos: g.Pos}
			e.Reference = strings.TrimSpace(v) == "" || strings.HasPrefix(v, "${")
		} else if !inEntry {
			e = clientcfg.EnvSetting{Name: g.Name, Reference: true, HasValue: true, Value: "$" + g.Name}
		}
		switch {
		case e.Secret || e.HasValue && !e.Reference && secretToImport(g.Name, e.Value):
			d.p.Env = append(d.p.Env, Item{g.Name, "a secret the entry held inline: its value is in the env file, never in a policy"})
			d.s.Secrets = append(d.s.Secrets, Secret{g.Name, e.Value})
		case e.Reference || !e.HasValue:
			d.p.Env = append(d.p.Env, Item{g.Name, "the entry passes it into the container (-e " + g.Name + ")"})
		default:
			d.p.SetEnv = append(d.p.SetEnv, Pair{g.Name, e.Value, "a constant the entry set (-e)"})
		}
	}
}
