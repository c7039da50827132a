package docker

import (
	"bufio"
	"encoding/csv"
	"math"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/emit/argv"
	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/lazyre"
	"github.com/mcpolicy/mcpolicy/internal/position"
)

// dockerFlag describes one `docker run` / `podman run` option.
type dockerFlag struct {
	value bool // takes a value
	// read handles it; nil means the option neither grants nor takes away
	// anything the linter looks at (--rm, --name, --init, --pull...).
	read func(d *dockerRun, name string, v argv.Arg)
}

// unknownFlag marks an option the reader knows but the plan cannot hold
// and no flag kind names (a device, another container's volumes...): it is
// reported as unknown rather than passed over.
func unknownFlag(d *dockerRun, name string, v argv.Arg) {
	s := "--" + name
	if v.S != "" {
		s += " " + v.S
	}
	d.e.Flag(readback.FlagUnknown, s, v.Pos)
}

var (
	dockerBool  = dockerFlag{}
	dockerValue = dockerFlag{value: true}
)

// dockerShort maps the short options of docker and podman run.
var dockerShort = map[byte]string{
	'a': "attach", 'c': "cpu-shares", 'd': "detach", 'e': "env", 'h': "hostname", 'i': "interactive",
	'l': "label", 'm': "memory", 'p': "publish", 'P': "publish-all", 'q': "quiet", 't': "tty",
	'u': "user", 'v': "volume", 'w': "workdir",
}

var dockerFlags map[string]dockerFlag

func init() {
	dockerFlags = map[string]dockerFlag{
		// Read into the plan or into flags.
		"volume":       {true, (*dockerRun).volume},
		"mount":        {true, (*dockerRun).mount},
		"tmpfs":        {true, (*dockerRun).tmpfs},
		"env":          {true, (*dockerRun).envVar},
		"env-file":     {true, (*dockerRun).envFile},
		"network":      {true, (*dockerRun).network},
		"net":          {true, (*dockerRun).network},
		"read-only":    {false, func(d *dockerRun, _ string, v argv.Arg) { d.readOnly = boolValue(v.S) }},
		"cap-drop":     {true, (*dockerRun).capDrop},
		"cap-add":      {true, (*dockerRun).capAdd},
		"security-opt": {true, (*dockerRun).securityOpt},
		"privileged":   {false, (*dockerRun).privileged},
		"user":         {true, (*dockerRun).user},
		"pid":          {true, (*dockerRun).namespace},
		"ipc":          {true, (*dockerRun).namespace},
		"uts":          {true, (*dockerRun).namespace},
		"userns":       {true, (*dockerRun).namespace},
		"cgroupns":     {true, (*dockerRun).namespace},
		"memory":       {true, (*dockerRun).memory},
		"pids-limit":   {true, (*dockerRun).pids},
		"cpus":         {true, (*dockerRun).cpus},
		"workdir":      {true, func(d *dockerRun, _ string, v argv.Arg) { d.p.Workdir = v.S }},
		"label":        {true, (*dockerRun).label},
		// mcpolicy-launch's own: a hidden path below a bind (mounts[].hide).
		"mcpolicy-hide": {true, (*dockerRun).hide},
		"entrypoint":    {true, func(d *dockerRun, _ string, v argv.Arg) { d.entrypoint = v.S }},
		"interactive":   {false, func(d *dockerRun, _ string, v argv.Arg) { d.interactive = boolValue(v.S) }},
		"tty": {false, func(d *dockerRun, _ string, v argv.Arg) {
			if boolValue(v.S) {
				d.e.Flag(readback.FlagStdio, "-t/--tty: a terminal between the client and the server's JSON-RPC (docker refuses -it when the client's stdin is not one; a tty rewrites line ends and echoes)", v.Pos)
			}
		}},
		"detach": {false, func(d *dockerRun, _ string, v argv.Arg) {
			if boolValue(v.S) {
				d.e.Flag(readback.FlagStdio, "-d/--detach: the server is cut off from the client's stdin and stdout", v.Pos)
			}
		}},
		"pull": {true, func(d *dockerRun, _ string, v argv.Arg) { d.e.Target().Pull, d.e.Target().PullPos = v.S, v.Pos }},
		"use-api-socket": {false, func(d *dockerRun, _ string, v argv.Arg) {
			if boolValue(v.S) {
				d.e.Flag(readback.FlagDockerSocket, "--use-api-socket", v.Pos)
			}
		}},

		// Known, and wider than a plan can say: reported as unknown.
		"device": {true, func(d *dockerRun, _ string, v argv.Arg) {
			d.e.Flag(readback.FlagHostDevice, "--device "+v.S, v.Pos)
		}},
		"device-cgroup-rule": {true, unknownFlag},
		"volumes-from":       {true, unknownFlag},
		"gpus":               {true, unknownFlag},
		"env-host": {false, func(d *dockerRun, name string, v argv.Arg) { // podman: the whole host environment
			d.envHost = boolValue(v.S)
			boolUnknown(d, name, v)
		}},
		"rootfs":        {false, boolUnknown}, // podman: the "image" is a host folder
		"volume-driver": {true, unknownFlag},

		// Neither grant nor take away anything the linter looks at.
		"rm":   dockerBool,
		"init": dockerBool, "quiet": dockerBool, "publish-all": dockerBool, "sig-proxy": dockerBool,
		"disable-content-trust": dockerBool, "no-healthcheck": dockerBool, "oom-kill-disable": dockerBool,
		"help": dockerBool, "replace": dockerBool, "read-only-tmpfs": dockerBool, "http-proxy": dockerBool,
		"no-hosts": dockerBool, "unsetenv-all": dockerBool, "tls-verify": dockerBool, "env-merge": dockerValue,
		"name": dockerValue, "platform": dockerValue, "hostname": dockerValue,
		"domainname": dockerValue, "restart": dockerValue, "stop-signal": dockerValue, "stop-timeout": dockerValue,
		"health-cmd": dockerValue, "health-interval": dockerValue, "health-retries": dockerValue,
		"health-start-period": dockerValue, "health-start-interval": dockerValue, "health-timeout": dockerValue,
		"health-on-failure": dockerValue, "health-log-destination": dockerValue, "health-max-log-count": dockerValue,
		"health-max-log-size": dockerValue, "health-startup-cmd": dockerValue, "health-startup-interval": dockerValue,
		"health-startup-retries": dockerValue, "health-startup-success": dockerValue, "health-startup-timeout": dockerValue,
		"log-driver": dockerValue, "log-opt": dockerValue, "dns": dockerValue, "dns-option": dockerValue,
		"dns-opt": dockerValue, "dns-search": dockerValue, "add-host": dockerValue, "mac-address": dockerValue,
		"ip": dockerValue, "ip6": dockerValue, "link": dockerValue, "link-local-ip": dockerValue,
		"network-alias": dockerValue, "net-alias": dockerValue, "expose": dockerValue, "publish": dockerValue,
		"ulimit": dockerValue, "memory-swap": dockerValue, "memory-reservation": dockerValue,
		"memory-swappiness": dockerValue, "kernel-memory": dockerValue, "shm-size": dockerValue,
		"shm-size-systemd": dockerValue, "cpu-shares": dockerValue, "cpu-period": dockerValue,
		"cpu-quota": dockerValue, "cpu-rt-period": dockerValue, "cpu-rt-runtime": dockerValue,
		"cpu-count": dockerValue, "cpu-percent": dockerValue, "cpuset-cpus": dockerValue, "cpuset-mems": dockerValue,
		"blkio-weight": dockerValue, "blkio-weight-device": dockerValue, "device-read-bps": dockerValue,
		"device-read-iops": dockerValue, "device-write-bps": dockerValue, "device-write-iops": dockerValue,
		"oom-score-adj": dockerValue, "cidfile": dockerValue, "label-file": dockerValue, "annotation": dockerValue,
		"attach": dockerValue, "detach-keys": dockerValue, "isolation": dockerValue, "runtime": dockerValue,
		"storage-opt": dockerValue, "sysctl": dockerValue, "cgroup-parent": dockerValue, "group-add": dockerValue,
		// podman
		"arch": dockerValue, "os": dockerValue, "variant": dockerValue, "authfile": dockerValue,
		"cert-dir": dockerValue, "creds": dockerValue, "decryption-key": dockerValue, "conmon-pidfile": dockerValue,
		"pod": dockerValue, "pod-id-file": dockerValue, "requires": dockerValue, "sdnotify": dockerValue,
		"seccomp-policy": dockerValue, "systemd": dockerValue, "tz": dockerValue, "umask": dockerValue,
		"uidmap": dockerValue, "gidmap": dockerValue, "subuidname": dockerValue, "subgidname": dockerValue,
		"passwd": dockerBool, "passwd-entry": dockerValue, "group-entry": dockerValue, "hostuser": dockerValue,
		"image-volume": dockerValue, "init-path": dockerValue, "personality": dockerValue,
		"preserve-fds": dockerValue, "preserve-fd": dockerValue, "secret": dockerValue, "timeout": dockerValue,
		"cgroup-conf": dockerValue, "cgroups": dockerValue, "chrootdirs": dockerValue, "retry": dockerValue,
		"retry-delay": dockerValue, "unsetenv": dockerValue, "hosts-file": dockerValue, "pidfile": dockerValue,
		"rdt-class": dockerValue, "log-level": dockerValue,
	}
}

func boolUnknown(d *dockerRun, name string, v argv.Arg) {
	if boolValue(v.S) {
		d.e.Flag(readback.FlagUnknown, "--"+name, v.Pos)
	}
}

// boolValue reads a boolean option's value: "" (the option alone) is true.
func boolValue(s string) bool {
	if s == "" {
		return true
	}
	b, err := strconv.ParseBool(s)
	return err != nil || b
}

// dockerGlobal are the options of docker and podman themselves, before
// the subcommand; each says whether it takes a value.
var dockerGlobal = map[string]bool{
	"context": true, "c": true, "config": true, "host": true, "H": true, "log-level": true, "l": true,
	"debug": false, "D": false, "tls": false, "tlsverify": false, "tlscacert": true, "tlscert": true,
	"tlskey": true, "remote": false, "r": false, "connection": true, "url": true, "identity": true,
	"root": true, "runroot": true, "storage-driver": true, "storage-opt": true, "cgroup-manager": true,
	"events-backend": true, "runtime": true, "network-cmd-path": true, "ssh": true, "module": true,
}

// dockerRun is a `docker run` command line being read.
type dockerRun struct {
	e      argv.Entry
	engine string
	p      *compiler.Plan
	runPos position.Pos

	netMode                   string
	hasNetwork                bool
	readOnly, nnp, capDropAll bool
	hasUser, keepID           bool
	entrypoint                string
	binds                     []compiler.Mount

	interactive bool
	args        []argv.Arg // the run's arguments, as written
	// bareEnv is the -e NAME (no value, its own argument) the option just
	// read was, nil otherwise: a word after it is the image.
	bareEnv *argv.Arg
	// envUnknown: an --env-file whose names cannot be read; envHost:
	// podman --env-host passes every variable.
	envUnknown, envHost bool
}

// Parse reads `docker run ...` / `podman run ...` (engine: the program)
// into the entry's plan and flags.
func Parse(e argv.Entry, engine string, cmd argv.Arg, args []argv.Arg) {
	i, ok := runAt(e, engine, cmd, args)
	if !ok {
		return
	}
	if b, ok := EngineAliases[engine]; ok {
		engine = b
	}
	d := &dockerRun{e: e, engine: engine, runPos: args[i].Pos, p: &compiler.Plan{
		Server: e.Server(), Pos: e.Target().Pos, Mounts: []compiler.Mount{}, Env: []compiler.EnvGrant{},
		Protected: []compiler.Protected{}, Backends: []string{engine},
		User: compiler.User{UID: -1, GID: -1},
	}}
	e.Target().Plan = d.p
	d.args = args[i+1:]
	rest := d.options(args, i+1)
	rest = d.image(rest)
	e.DangerousArgs(rest, false)
	if d.entrypoint != "" {
		d.p.Command = append(d.p.Command, d.entrypoint)
	}
	for _, a := range rest {
		d.p.Command = append(d.p.Command, a.S)
	}
	d.finish()
}

// EngineAliases are the programs that take docker's or podman's run
// arguments and are read as that engine: nerdctl (containerd: Rancher
// Desktop, Lima) and finch take docker's, podman-remote podman's. They are
// read, not built for: mcpolicy has no backend of their name.
var EngineAliases = map[string]string{"nerdctl": Backend, "finch": Backend, "podman-remote": PodmanBackend}

// runAt finds the run subcommand past the engine's global options, and
// flags any other subcommand (docker mcp gateway run, docker exec...):
// not a confinement this reads.
func runAt(e argv.Entry, engine string, cmd argv.Arg, args []argv.Arg) (int, bool) {
	i := 0
	for i < len(args) && strings.HasPrefix(args[i].S, "-") && args[i].S != "-" {
		name, _, joined := strings.Cut(strings.TrimLeft(args[i].S, "-"), "=")
		takes, ok := dockerGlobal[name]
		if !ok {
			e.Flag(readback.FlagUnknown, args[i].S, args[i].Pos)
		}
		i++
		if takes && !joined {
			i++
		}
	}
	if i < len(args) && args[i].S == "container" {
		i++
	}
	if i >= len(args) || args[i].S != "run" {
		sub, pos := "(none)", cmd.Pos
		if i < len(args) {
			sub, pos = args[i].S, args[i].Pos
		}
		e.Flag(readback.FlagUnknown, engine+" "+sub, pos)
		return 0, false
	}
	return i, true
}

// options reads the run's options from args[i], up to "--" or the first
// word that is none (the image), and returns what follows them.
func (d *dockerRun) options(args []argv.Arg, i int) []argv.Arg {
	for i < len(args) {
		a := args[i]
		if a.S == "--" {
			d.bareEnv = nil // what follows -- is the image
			i++
			break
		}
		if !strings.HasPrefix(a.S, "-") || a.S == "-" {
			break
		}
		if head, tail, ok := joinedOption(a.S); ok {
			// "-e X=Y", "--network none": one argument to the engine.
			d.e.Flag(readback.FlagJoinedArg, a.S, a.Pos)
			args = append(args[:i:i], append([]argv.Arg{{S: head, Pos: a.Pos}, {S: tail, Pos: a.Pos}}, args[i+1:]...)...)
			continue
		}
		d.bareEnv = nil
		i++
		if strings.HasPrefix(a.S, "--") {
			i = d.longOption(a, args, i)
		} else {
			i = d.shortOptions(a, args, i)
		}
	}
	return args[i:]
}

// longOption reads --name or --name=value, the value from args[i] where
// it is not joined, and returns the index past it.
func (d *dockerRun) longOption(a argv.Arg, args []argv.Arg, i int) int {
	name, val, joined := strings.Cut(a.S[2:], "=")
	f, ok := dockerFlags[name]
	if !ok {
		// An unknown option: docker refuses to start, podman may
		// know it. Taken as a boolean; its value, if it has one,
		// would be read as the image.
		d.e.Flag(readback.FlagUnknown, a.S, a.Pos)
		return i
	}
	v := argv.Arg{S: val, Pos: a.Pos}
	if f.value && !joined {
		if v, i, ok = d.nextValue(args, i, name, a.S, a.Pos); !ok {
			return i
		}
	}
	if f.read != nil {
		f.read(d, name, v)
	}
	return i
}

// shortOptions reads a cluster of short options: -it, -i --rm, -eKEY=V,
// -v/a:/b; the last one's value may be args[i]. It returns the index
// past them.
func (d *dockerRun) shortOptions(a argv.Arg, args []argv.Arg, i int) int {
	cluster := a.S[1:]
	for j := 0; j < len(cluster); j++ {
		name, ok := dockerShort[cluster[j]]
		if !ok {
			d.e.Flag(readback.FlagUnknown, "-"+cluster[j:j+1], a.Pos)
			continue
		}
		f := dockerFlags[name]
		if !f.value {
			if f.read != nil {
				f.read(d, name, argv.Arg{Pos: a.Pos})
			}
			continue
		}
		v := argv.Arg{S: strings.TrimPrefix(cluster[j+1:], "="), Pos: a.Pos}
		if j+1 == len(cluster) {
			if v, i, ok = d.nextValue(args, i, name, "-"+cluster[j:j+1], a.Pos); !ok {
				return i
			}
		}
		if f.read != nil {
			f.read(d, name, v)
		}
		break
	}
	return i
}

// nextValue takes option opt's value from args[i], flagged where there is
// none; a -e NAME there (no value) may be followed by what the engine
// takes for the image.
func (d *dockerRun) nextValue(args []argv.Arg, i int, name, opt string, pos position.Pos) (argv.Arg, int, bool) {
	if i >= len(args) {
		d.e.Flag(readback.FlagUnknown, opt+" (no value)", pos)
		return argv.Arg{}, i, false
	}
	v := args[i]
	if name == "env" && !strings.Contains(v.S, "=") {
		d.bareEnv = &v
	}
	return v, i + 1, true
}

// image reads the image, the first of rest, and returns the command after
// it; a word after a bare -e NAME may be the value the writer meant.
func (d *dockerRun) image(rest []argv.Arg) []argv.Arg {
	if len(rest) == 0 {
		return rest
	}
	img := rest[0]
	d.p.Image = img.S
	d.e.Target().ImagePos = img.Pos
	if d.bareEnv != nil && valueAsImage(img.S, rest[1:]) {
		name := d.bareEnv.S
		d.e.Flag(readback.FlagEnvAsImage, name+" "+img.S, img.Pos)
		if d.e.Secret(name, img.S) {
			d.e.Flag(readback.FlagSecretInline, name, img.Pos)
		}
	}
	return rest[1:]
}

// finish turns what the options left unsaid into flags, with docker's
// defaults: a bridge network, the image's user, a writable root, the
// default capabilities and no no-new-privileges.
func (d *dockerRun) finish() {
	if !d.interactive {
		d.e.Flag(readback.FlagStdio, "no -i: the engine gives the server no stdin, and it exits at once", d.runPos)
	}
	if !d.envUnknown && !d.envHost {
		for _, k := range d.e.EnvKeys() {
			if !slices.Contains(d.p.EnvNames(), k.S) && !d.e.Plumbing(k.S) && !d.references(k.S) {
				d.e.Flag(readback.FlagEnvNotPassed, k.S, k.Pos)
			}
		}
	}
	s := &d.p.Subtractions
	s.ReadOnlyRoot, s.DropAllCaps, s.NoNewPrivileges = d.readOnly, d.capDropAll, d.nnp
	if !d.capDropAll {
		d.e.Flag(readback.FlagNoCapDrop, "", d.runPos)
	}
	if !d.nnp {
		d.e.Flag(readback.FlagNoNewPrivsMissing, "", d.runPos)
	}
	if !d.readOnly {
		d.e.Flag(readback.FlagNoReadOnly, "", d.runPos)
	}
	if !d.hasUser {
		if d.keepID { // podman --userns keep-id: the host user's own uid
			s.NonRootUser = true
		} else {
			d.e.Flag(readback.FlagRootUser, "", d.runPos)
		}
	}
	if !d.hasNetwork {
		def := "bridge"
		if d.engine == PodmanBackend {
			def = "default"
		}
		d.e.Flag(readback.FlagNetwork, def, d.runPos)
	}
	if d.netMode == "none" {
		d.p.Network.Mode = "none"
		s.NoNetwork = true
	}
	d.protected()
}

// protected moves a read-only bind that sits inside a read-write bind, of
// the same host path below it, to Protected: it takes away, grants nothing.
// This is how mcpolicy's own args keep .env and .git read-only.
func (d *dockerRun) protected() {
	for _, m := range d.binds {
		inside := false
		if m.Mode == compiler.ReadOnly {
			for _, r := range d.binds {
				if r.Mode != compiler.ReadWrite || r.Target == m.Target || !argv.Within(m.Target, r.Target) {
					continue
				}
				if r.Source.Join(argv.Rel(m.Target, r.Target)) == m.Source {
					inside = true
					break
				}
			}
		}
		if inside {
			d.p.Protected = append(d.p.Protected, compiler.Protected{Source: m.Source, Target: m.Target, Name: path.Base(m.Target)})
		} else {
			d.p.Mounts = append(d.p.Mounts, m)
		}
	}
}

// bind records a bind mount of a host path.
func (d *dockerRun) bind(src, dst string, readonly bool, pos position.Pos) {
	if argv.EngineSocket(src) || argv.EngineSocket(dst) {
		d.e.Flag(readback.FlagDockerSocket, src, pos)
	}
	mode := compiler.ReadWrite
	if readonly {
		mode = compiler.ReadOnly
	}
	d.binds = append(d.binds, compiler.Mount{Source: d.e.HostPath(src), Target: path.Clean(dst), Mode: mode, Pos: pos})
}

// hide reads mcpolicy-launch's --mcpolicy-hide into the hidden paths of
// the bind at its target: a subtraction. One that names no bind before it
// is unknown.
func (d *dockerRun) hide(_ string, v argv.Arg) {
	h, err := artefact.ParseEngineHide(v.S)
	if err == nil {
		for i := range d.binds {
			if m := &d.binds[i]; m.Target == path.Clean(h.Target) && !slices.Contains(m.Hide, h.Pattern) {
				at, _ := slices.BinarySearch(m.Hide, h.Pattern)
				m.Hide = slices.Insert(m.Hide, at, h.Pattern)
				m.HidePos = slices.Insert(m.HidePos, at, v.Pos)
				return
			}
		}
	}
	d.e.Flag(readback.FlagUnknown, artefact.EngineHideFlag+" "+v.S, v.Pos)
}

// hostSource reports whether a -v source is a host path, not a volume name.
func hostSource(s string) bool {
	return argv.IsAbs(argv.Slash(s)) || strings.HasPrefix(s, ".") || strings.HasPrefix(s, "~") ||
		strings.HasPrefix(s, "$") || strings.HasPrefix(s, "%") || strings.HasPrefix(s, `\\`)
}

// volume reads -v SRC:DST[:OPTS]. A source that is not a path is a named
// volume: storage of the engine, no host path; -v DST alone is anonymous.
func (d *dockerRun) volume(_ string, v argv.Arg) {
	parts := splitVolume(v.S)
	if len(parts) < 2 {
		return
	}
	src, dst := parts[0], parts[1]
	readonly := false
	if len(parts) > 2 {
		for _, o := range strings.Split(parts[2], ",") {
			if o == "ro" || o == "readonly" {
				readonly = true
			}
		}
	}
	if !hostSource(src) {
		return
	}
	d.bind(src, dst, readonly, v.Pos)
}

// splitVolume splits a -v value at its colons, but not at a Windows
// drive's (C:\\Users\\me:/w) nor inside a ${VAR:-default}.
func splitVolume(s string) []string {
	var parts []string
	start, depth := 0, 0
	if argv.IsWinAbs(s) {
		start = 2
	}
	from := 0
	for i := start; i < len(s); i++ {
		switch {
		case strings.HasPrefix(s[i:], "${"):
			depth++
			i++
		case s[i] == '}' && depth > 0:
			depth--
		case s[i] == ':' && depth == 0:
			parts = append(parts, s[from:i])
			from = i + 1
		}
	}
	return append(parts, s[from:])
}

// mount reads --mount, a CSV record as docker and podman parse it.
func (d *dockerRun) mount(_ string, v argv.Arg) {
	fields, err := csv.NewReader(strings.NewReader(v.S)).Read()
	if err != nil {
		d.e.Flag(readback.FlagUnknown, "--mount "+v.S, v.Pos)
		return
	}
	kv := map[string]string{}
	typ, readonly := "volume", false
	for _, f := range fields {
		k, val, has := strings.Cut(strings.TrimSpace(f), "=")
		k = strings.ToLower(k)
		switch k {
		case "type":
			typ = val
		case "source", "src":
			kv["source"] = val
		case "target", "dst", "destination":
			kv["target"] = val
		case "readonly", "ro":
			readonly = !has || boolValue(val)
		case "rw":
			readonly = has && !boolValue(val)
		default:
			kv[k] = val
		}
	}
	switch typ {
	case "bind", "glob":
		if kv["source"] == "" || kv["target"] == "" {
			d.e.Flag(readback.FlagUnknown, "--mount "+v.S, v.Pos)
			return
		}
		d.bind(kv["source"], kv["target"], readonly, v.Pos)
	case "volume", "image", "devpts":
	case "tmpfs":
		opts := "rw"
		if readonly {
			opts = "ro"
		}
		if sz, ok := kv["tmpfs-size"]; ok {
			opts += ",size=" + sz
		}
		d.tmpfsAt(kv["target"], opts, v.Pos)
	case "ramfs":
		d.e.Flag(readback.FlagUnboundedTmpfs, kv["target"], v.Pos)
	case "npipe":
		if argv.EngineSocket(kv["source"]) {
			d.e.Flag(readback.FlagDockerSocket, kv["source"], v.Pos)
		} else {
			d.e.Flag(readback.FlagUnknown, "--mount "+v.S, v.Pos)
		}
	default:
		d.e.Flag(readback.FlagUnknown, "--mount "+v.S, v.Pos)
	}
}

// tmpfs reads --tmpfs PATH[:OPTS].
func (d *dockerRun) tmpfs(_ string, v argv.Arg) {
	dst, opts, _ := strings.Cut(v.S, ":")
	d.tmpfsAt(dst, opts, v.Pos)
}

// tmpfsAt records a tmpfs: the first writable one with a size is the
// scratch; a read-only one is a mask (mcpolicy's own cover /tmp, /run...);
// a writable one without a size is unbounded.
func (d *dockerRun) tmpfsAt(dst, opts string, pos position.Pos) {
	readonly, size := false, ""
	for _, o := range strings.Split(opts, ",") {
		k, val, _ := strings.Cut(o, "=")
		switch k {
		case "ro":
			readonly = true
		case "rw":
			readonly = false
		case "size":
			size = val
		}
	}
	if readonly {
		return
	}
	n, ok := parseBytes(size)
	if !ok {
		v := dst
		if size != "" {
			v += " (size=" + size + ")"
		}
		d.e.Flag(readback.FlagUnboundedTmpfs, v, pos)
		return
	}
	if d.p.Scratch == nil {
		d.p.Scratch = &compiler.Scratch{Target: path.Clean(dst), SizeBytes: n, Pos: pos}
	}
}

var bytesRE = lazyre.New(`^([0-9]+(?:\.[0-9]+)?)\s*([kmgtpKMGTP]?)(?:i?[bB])?$`)

// parseBytes reads a size as docker does (units.RAMInBytes): a number with
// an optional k, m, g, t or p (powers of 1024) and an optional b or ib.
func parseBytes(s string) (int64, bool) {
	m := bytesRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, false
	}
	f, err := strconv.ParseFloat(m[1], 64)
	if err != nil || f <= 0 {
		return 0, false
	}
	shift := map[string]uint{"": 0, "k": 10, "m": 20, "g": 30, "t": 40, "p": 50}[strings.ToLower(m[2])]
	f *= float64(uint64(1) << shift)
	if f >= math.MaxInt64 {
		return 0, false
	}
	return int64(f), true
}

// envVar reads -e NAME or -e NAME=VALUE. A value written in the argv is
// in the config file and in ps: it is flagged when it is a secret
// (secrets.go: AWS_REGION=us-east-1 and LOG_LEVEL=debug are settings).
func (d *dockerRun) envVar(_ string, v argv.Arg) {
	name, val, has := strings.Cut(v.S, "=")
	d.addEnv(name, v.Pos)
	if has {
		d.e.Target().EnvPassed = append(d.e.Target().EnvPassed, name)
		d.e.DangerousEnv(name, val, v.Pos)
	}
	if has && d.e.Secret(name, val) {
		d.e.Flag(readback.FlagSecretInline, name, v.Pos)
	}
}

func (d *dockerRun) addEnv(name string, pos position.Pos) {
	for _, e := range d.p.Env {
		if e.Name == name {
			return
		}
	}
	d.p.Env = append(d.p.Env, compiler.EnvGrant{Name: name, Pos: pos})
}

// envFile reads the names an --env-file passes; an unreadable one is
// reported, its names being unknown.
func (d *dockerRun) envFile(_ string, v argv.Arg) {
	f := d.e.LocalFile(v.S)
	if f == "" {
		d.envUnknown = true
		d.e.Flag(readback.FlagUnknown, "--env-file "+v.S+d.e.NotRead(), v.Pos)
		return
	}
	fh, err := os.Open(f)
	if err != nil {
		d.envUnknown = true
		d.e.Flag(readback.FlagUnknown, "--env-file "+v.S+" (unreadable)", v.Pos)
		return
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, _, has := strings.Cut(line, "=")
		d.addEnv(strings.TrimSpace(name), v.Pos)
		if has { // a value in the file; NAME alone comes from the engine's environment
			d.e.Target().EnvPassed = append(d.e.Target().EnvPassed, strings.TrimSpace(name))
		}
	}
}

func (d *dockerRun) network(_ string, v argv.Arg) {
	d.hasNetwork, d.netMode = true, v.S
	d.p.Network.Pos = v.Pos
	if v.S != "none" {
		d.e.Flag(readback.FlagNetwork, v.S, v.Pos)
	}
}

func (d *dockerRun) capDrop(_ string, v argv.Arg) {
	for _, c := range argv.Caps(v.S) {
		if c == "ALL" {
			d.capDropAll = true
		}
	}
}

func (d *dockerRun) capAdd(_ string, v argv.Arg) {
	for _, c := range argv.Caps(v.S) {
		d.e.Flag(readback.FlagCapAdd, c, v.Pos)
	}
}

func (d *dockerRun) privileged(_ string, v argv.Arg) {
	if boolValue(v.S) {
		d.e.Flag(readback.FlagPrivileged, "", v.Pos)
	}
}

// securityOpt reads --security-opt KEY[=|:]VALUE.
func (d *dockerRun) securityOpt(_ string, v argv.Arg) {
	k, val, ok := strings.Cut(v.S, "=")
	if !ok {
		k, val, _ = strings.Cut(v.S, ":")
	}
	switch k {
	case "no-new-privileges":
		d.nnp = boolValue(val)
	case "seccomp":
		if val == "unconfined" {
			d.e.Flag(readback.FlagSeccompUnconfined, val, v.Pos)
		}
	case "apparmor":
		if val == "unconfined" {
			d.e.Flag(readback.FlagAppArmorUnconf, val, v.Pos)
		}
	case "label":
		if val == "disable" { // SELinux confinement off
			d.e.Flag(readback.FlagSecurityOff, v.S, v.Pos)
		}
	case "systempaths", "unmask": // /proc and /sys unmasked: sysrq-trigger, kcore, the kernel's tunables
		if k == "unmask" || val == "unconfined" {
			d.e.Flag(readback.FlagSecurityOff, v.S, v.Pos)
		}
	case "mask", "proc-opts":
	default: // anything else
		d.e.Flag(readback.FlagUnknown, "--security-opt "+v.S, v.Pos)
	}
}

// user reads --user USER[:GROUP]; a name that is not a number gives -1.
func (d *dockerRun) user(_ string, v argv.Arg) {
	d.hasUser = true
	if v.S == compiler.UIDPlaceholder+":"+compiler.GIDPlaceholder { // user: "invoker", resolved at spawn
		d.p.User, d.p.UserPos = compiler.User{UID: -1, GID: -1, Invoker: true}, v.Pos
		d.p.Subtractions.NonRootUser = true
		return
	}
	u, g, hasG := strings.Cut(v.S, ":")
	id := func(s string) int {
		if s == "root" {
			return 0
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return -1
		}
		return n
	}
	d.p.User = compiler.User{UID: id(u), GID: -1}
	if hasG {
		d.p.User.GID = id(g)
	}
	d.p.UserPos = v.Pos
	root := d.p.User.UID == 0
	d.p.Subtractions.NonRootUser = !root
	if root {
		d.e.Flag(readback.FlagRootUser, v.S, v.Pos)
	}
}

// namespace reads --pid/--ipc/--uts/--userns/--cgroupns; "host" shares
// the host's (Value: which namespace).
func (d *dockerRun) namespace(name string, v argv.Arg) {
	which := map[string]string{"pid": "pid", "ipc": "ipc", "uts": "uts", "userns": "user", "cgroupns": "cgroup"}[name]
	switch {
	case v.S == "host":
		d.e.Flag(readback.FlagHostNamespace, which, v.Pos)
	case name == "userns" && strings.HasPrefix(v.S, "keep-id"):
		d.keepID = true
	}
}

func (d *dockerRun) memory(_ string, v argv.Arg) {
	if n, ok := parseBytes(v.S); ok {
		d.p.Subtractions.MemoryBytes = n
		d.p.LimitsPos = v.Pos
	}
}

func (d *dockerRun) pids(_ string, v argv.Arg) {
	if n, err := strconv.ParseInt(v.S, 10, 64); err == nil && n > 0 {
		d.p.Subtractions.Pids = n
		d.p.LimitsPos = v.Pos
	}
}

func (d *dockerRun) cpus(_ string, v argv.Arg) {
	if f, err := strconv.ParseFloat(v.S, 64); err == nil && f > 0 {
		d.p.Subtractions.MilliCPUs = int64(math.Round(f * 1000))
		d.p.LimitsPos = v.Pos
	}
}

// label keeps the plan hash mcpolicy puts on its containers.
func (d *dockerRun) label(_ string, v argv.Arg) {
	if k, val, ok := strings.Cut(v.S, "="); ok && k == LabelPlan {
		d.p.Hash = val
	}
}

// joinedOption splits an argument that holds a docker option and its value
// with a blank between ("-e X=Y", "-v a:b", "--network none"): clients pass
// it as one argument, and the engine reads the value with the blank (or
// the whole as an unknown option).
func joinedOption(s string) (head, tail string, ok bool) {
	sp := strings.IndexAny(s, " \t")
	if sp < 0 {
		return "", "", false
	}
	head, tail = s[:sp], strings.TrimSpace(s[sp:])
	if tail == "" || strings.Contains(head, "=") {
		return "", "", false
	}
	if name, long := strings.CutPrefix(head, "--"); long {
		_, known := dockerFlags[name]
		return head, tail, known
	}
	for i := 1; i < len(head); i++ {
		if _, known := dockerShort[head[i]]; !known {
			return "", "", false
		}
	}
	return head, tail, len(head) > 1
}

var imageName = lazyre.New(`^([A-Za-z0-9.-]+(:[0-9]+)?/)?[a-z0-9]+([._-]+[a-z0-9]+)*(/[a-z0-9]+([._-]+[a-z0-9]+)*)*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@[a-z0-9]+:[A-Fa-f0-9]{32,})?$`)

// valueAsImage reports whether the word after a bare -e NAME, read as the
// image, was meant as NAME's value: it cannot be an image name (upper
// case, an = or a blank: a token, a sentence), or it is a plain word while
// the word after it looks like the image (a registry path or a tag).
func valueAsImage(img string, rest []argv.Arg) bool {
	if strings.Contains(img, "${") || strings.HasPrefix(img, "$") {
		return false
	}
	if !imageName.MatchString(img) {
		return true
	}
	if len(rest) == 0 || strings.ContainsAny(img, "/:@") {
		return false
	}
	next := rest[0].S
	return !strings.HasPrefix(next, "-") && !strings.HasPrefix(next, "/") && !strings.HasPrefix(next, ".") &&
		strings.ContainsAny(next, "/:") && imageName.MatchString(next)
}

// references reports whether an argument of the run names the variable
// (${NAME}, $NAME): a client that expands it there uses the entry's value.
func (d *dockerRun) references(name string) bool {
	for _, a := range d.args {
		if strings.Contains(a.S, "${"+name+"}") || strings.Contains(a.S, "${env:"+name+"}") || strings.Contains(a.S, "${"+name+":-") {
			return true
		}
		if i := strings.Index(a.S, "$"+name); i >= 0 {
			if j := i + 1 + len(name); j == len(a.S) || !isWordChar(a.S[j]) {
				return true
			}
		}
	}
	return false
}

func isWordChar(c byte) bool {
	return (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') || c >= '0' && c <= '9' || c == '_'
}
