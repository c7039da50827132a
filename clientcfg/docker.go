package clientcfg

import (
	"bufio"
	"encoding/csv"
	"math"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/lint"
	"github.com/mcpolicy/mcpolicy/emit/docker"
	"github.com/mcpolicy/mcpolicy/schema"
)

// dockerFlag describes one `docker run` / `podman run` option.
type dockerFlag struct {
	value bool // takes a value
	// read handles it; nil means the option neither grants nor takes away
	// anything the linter looks at (--rm, --name, --init, --pull...).
	read func(d *dockerRun, name string, v arg)
}

// unknownFlag marks an option the reader knows but the plan cannot hold
// and no flag kind names (a device, another container's volumes...): it is
// reported as unknown rather than passed over.
func unknownFlag(d *dockerRun, name string, v arg) {
	s := "--" + name
	if v.s != "" {
		s += " " + v.s
	}
	d.e.flag(lint.FlagUnknown, s, v.pos)
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
		"read-only":    {false, func(d *dockerRun, _ string, v arg) { d.readOnly = boolValue(v.s) }},
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
		"workdir":      {true, func(d *dockerRun, _ string, v arg) { d.p.Workdir = v.s }},
		"label":        {true, (*dockerRun).label},
		"entrypoint":   {true, func(d *dockerRun, _ string, v arg) { d.entrypoint = v.s }},
		"interactive":  {false, func(d *dockerRun, _ string, v arg) { d.interactive = boolValue(v.s) }},
		"tty": {false, func(d *dockerRun, _ string, v arg) {
			if boolValue(v.s) {
				d.e.flag(lint.FlagStdio, "-t/--tty: a terminal between the client and the server's JSON-RPC (docker refuses -it when the client's stdin is not one; a tty rewrites line ends and echoes)", v.pos)
			}
		}},
		"detach": {false, func(d *dockerRun, _ string, v arg) {
			if boolValue(v.s) {
				d.e.flag(lint.FlagStdio, "-d/--detach: the server is cut off from the client's stdin and stdout", v.pos)
			}
		}},
		"pull": {true, func(d *dockerRun, _ string, v arg) { d.e.t.Pull, d.e.t.PullPos = v.s, v.pos }},
		"use-api-socket": {false, func(d *dockerRun, _ string, v arg) {
			if boolValue(v.s) {
				d.e.flag(lint.FlagDockerSocket, "--use-api-socket", v.pos)
			}
		}},

		// Known, and wider than a plan can say: reported as unknown.
		"device":             {true, unknownFlag},
		"device-cgroup-rule": {true, unknownFlag},
		"volumes-from":       {true, unknownFlag},
		"gpus":               {true, unknownFlag},
		"env-host": {false, func(d *dockerRun, name string, v arg) { // podman: the whole host environment
			d.envHost = boolValue(v.s)
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

func boolUnknown(d *dockerRun, name string, v arg) {
	if boolValue(v.s) {
		d.e.flag(lint.FlagUnknown, "--"+name, v.pos)
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
	e      *entry
	engine string
	p      *compiler.Plan
	runPos schema.Pos

	netMode                   string
	hasNetwork                bool
	readOnly, nnp, capDropAll bool
	hasUser, keepID           bool
	entrypoint                string
	binds                     []compiler.Mount

	interactive bool
	args        []arg // the run's arguments, as written
	// bareEnv is the -e NAME (no value, its own argument) the option just
	// read was, nil otherwise: a word after it is the image.
	bareEnv *arg
	// envUnknown: an --env-file whose names cannot be read; envHost:
	// podman --env-host passes every variable.
	envUnknown, envHost bool
}

// docker reads `docker run ...` / `podman run ...` into a plan and flags.
func (e *entry) docker(engine string, cmd arg, args []arg) {
	i := 0
	for i < len(args) && strings.HasPrefix(args[i].s, "-") && args[i].s != "-" {
		name, _, joined := strings.Cut(strings.TrimLeft(args[i].s, "-"), "=")
		takes, ok := dockerGlobal[name]
		if !ok {
			e.flag(lint.FlagUnknown, args[i].s, args[i].pos)
		}
		i++
		if takes && !joined {
			i++
		}
	}
	if i < len(args) && args[i].s == "container" {
		i++
	}
	if i >= len(args) || args[i].s != "run" {
		sub, pos := "(none)", cmd.pos
		if i < len(args) {
			sub, pos = args[i].s, args[i].pos
		}
		// docker mcp gateway run, docker exec...: not a confinement this reads.
		e.flag(lint.FlagUnknown, engine+" "+sub, pos)
		return
	}
	d := &dockerRun{e: e, engine: engine, runPos: args[i].pos, p: &compiler.Plan{
		Server: e.name, Pos: e.t.Pos, Mounts: []compiler.Mount{}, Env: []string{},
		Protected: []compiler.Protected{}, Backends: []string{engine},
		User: compiler.User{UID: -1, GID: -1},
	}}
	e.t.Plan = d.p
	d.args = args[i+1:]
	i++

	for i < len(args) {
		a := args[i]
		if a.s == "--" {
			d.bareEnv = nil // what follows -- is the image
			i++
			break
		}
		if !strings.HasPrefix(a.s, "-") || a.s == "-" {
			break
		}
		if head, tail, ok := joinedOption(a.s); ok {
			// "-e X=Y", "--network none": one argument to the engine.
			e.flag(lint.FlagJoinedArg, a.s, a.pos)
			args = append(args[:i:i], append([]arg{{head, a.pos}, {tail, a.pos}}, args[i+1:]...)...)
			continue
		}
		d.bareEnv = nil
		i++
		if strings.HasPrefix(a.s, "--") {
			name, val, joined := strings.Cut(a.s[2:], "=")
			f, ok := dockerFlags[name]
			if !ok {
				// An unknown option: docker refuses to start, podman may
				// know it. Taken as a boolean; its value, if it has one,
				// would be read as the image.
				e.flag(lint.FlagUnknown, a.s, a.pos)
				continue
			}
			v := arg{val, a.pos}
			if f.value && !joined {
				if i >= len(args) {
					e.flag(lint.FlagUnknown, a.s+" (no value)", a.pos)
					break
				}
				v = args[i]
				i++
				if name == "env" && !strings.Contains(v.s, "=") {
					d.bareEnv = &v
				}
			}
			if f.read != nil {
				f.read(d, name, v)
			}
			continue
		}
		// A cluster of short options: -it, -i --rm, -eKEY=V, -v/a:/b.
		cluster := a.s[1:]
		for j := 0; j < len(cluster); j++ {
			name, ok := dockerShort[cluster[j]]
			if !ok {
				e.flag(lint.FlagUnknown, "-"+cluster[j:j+1], a.pos)
				continue
			}
			f := dockerFlags[name]
			if !f.value {
				if f.read != nil {
					f.read(d, name, arg{"", a.pos})
				}
				continue
			}
			v := arg{strings.TrimPrefix(cluster[j+1:], "="), a.pos}
			if j+1 == len(cluster) {
				if i >= len(args) {
					e.flag(lint.FlagUnknown, "-"+cluster[j:j+1]+" (no value)", a.pos)
					break
				}
				v = args[i]
				i++
				if name == "env" && !strings.Contains(v.s, "=") {
					d.bareEnv = &v
				}
			}
			if f.read != nil {
				f.read(d, name, v)
			}
			break
		}
	}
	if i < len(args) {
		d.p.Image = args[i].s
		e.t.ImagePos = args[i].pos
		if d.bareEnv != nil && valueAsImage(args[i].s, args[i+1:]) {
			name := d.bareEnv.s
			e.flag(lint.FlagEnvAsImage, name+" "+args[i].s, args[i].pos)
			if looksLikeSecret(name, args[i].s) {
				e.flag(lint.FlagSecretInline, name, args[i].pos)
			}
		}
		i++
	}
	e.dangerousArgs(args[i:], false)
	if d.entrypoint != "" {
		d.p.Command = append(d.p.Command, d.entrypoint)
	}
	for ; i < len(args); i++ {
		d.p.Command = append(d.p.Command, args[i].s)
	}
	d.finish()
}

// finish turns what the options left unsaid into flags, with docker's
// defaults: a bridge network, the image's user, a writable root, the
// default capabilities and no no-new-privileges.
func (d *dockerRun) finish() {
	if !d.interactive {
		d.e.flag(lint.FlagStdio, "no -i: the engine gives the server no stdin, and it exits at once", d.runPos)
	}
	if !d.envUnknown && !d.envHost {
		for _, k := range d.e.envKeys {
			if !slices.Contains(d.p.Env, k.name) && !plumbing(k.name) && !d.references(k.name) {
				d.e.flag(lint.FlagEnvNotPassed, k.name, k.pos)
			}
		}
	}
	s := &d.p.Subtractions
	s.ReadOnlyRoot, s.DropAllCaps, s.NoNewPrivileges = d.readOnly, d.capDropAll, d.nnp
	if !d.capDropAll {
		d.e.flag(lint.FlagNoCapDrop, "", d.runPos)
	}
	if !d.nnp {
		d.e.flag(lint.FlagNoNewPrivsMissing, "", d.runPos)
	}
	if !d.readOnly {
		d.e.flag(lint.FlagNoReadOnly, "", d.runPos)
	}
	if !d.hasUser {
		if d.keepID { // podman --userns keep-id: the host user's own uid
			s.NonRootUser = true
		} else {
			d.e.flag(lint.FlagRootUser, "", d.runPos)
		}
	}
	if !d.hasNetwork {
		def := "bridge"
		if d.engine == "podman" {
			def = "default"
		}
		d.e.flag(lint.FlagNetwork, def, d.runPos)
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
				if r.Mode != compiler.ReadWrite || r.Target == m.Target || !within(m.Target, r.Target) {
					continue
				}
				if r.Source.Join(rel(m.Target, r.Target)) == m.Source {
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
func (d *dockerRun) bind(src, dst string, readonly bool, pos schema.Pos) {
	if isSocket(src) || isSocket(dst) {
		d.e.flag(lint.FlagDockerSocket, src, pos)
	}
	mode := compiler.ReadWrite
	if readonly {
		mode = compiler.ReadOnly
	}
	d.binds = append(d.binds, compiler.Mount{Source: d.e.hostPath(src), Target: path.Clean(dst), Mode: mode, Pos: pos})
}

// isSocket reports whether p is a container engine's API socket.
func isSocket(p string) bool {
	b := path.Base(slash(p))
	return b == "docker.sock" || b == "podman.sock" || strings.Contains(p, "docker_engine")
}

// hostSource reports whether a -v source is a host path, not a volume name.
func hostSource(s string) bool {
	return isAbs(slash(s)) || strings.HasPrefix(s, ".") || strings.HasPrefix(s, "~") ||
		strings.HasPrefix(s, "$") || strings.HasPrefix(s, "%") || strings.HasPrefix(s, `\\`)
}

// volume reads -v SRC:DST[:OPTS]. A source that is not a path is a named
// volume: storage of the engine, no host path; -v DST alone is anonymous.
func (d *dockerRun) volume(_ string, v arg) {
	parts := splitVolume(v.s)
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
	d.bind(src, dst, readonly, v.pos)
}

// splitVolume splits a -v value at its colons, but not at a Windows
// drive's (C:\\Users\\me:/w) nor inside a ${VAR:-default}.
func splitVolume(s string) []string {
	var parts []string
	start, depth := 0, 0
	if winAbs.MatchString(s) {
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
func (d *dockerRun) mount(_ string, v arg) {
	fields, err := csv.NewReader(strings.NewReader(v.s)).Read()
	if err != nil {
		d.e.flag(lint.FlagUnknown, "--mount "+v.s, v.pos)
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
			d.e.flag(lint.FlagUnknown, "--mount "+v.s, v.pos)
			return
		}
		d.bind(kv["source"], kv["target"], readonly, v.pos)
	case "volume", "image", "devpts":
	case "tmpfs":
		opts := "rw"
		if readonly {
			opts = "ro"
		}
		if sz, ok := kv["tmpfs-size"]; ok {
			opts += ",size=" + sz
		}
		d.tmpfsAt(kv["target"], opts, v.pos)
	case "ramfs":
		d.e.flag(lint.FlagUnboundedTmpfs, kv["target"], v.pos)
	case "npipe":
		if isSocket(kv["source"]) {
			d.e.flag(lint.FlagDockerSocket, kv["source"], v.pos)
		} else {
			d.e.flag(lint.FlagUnknown, "--mount "+v.s, v.pos)
		}
	default:
		d.e.flag(lint.FlagUnknown, "--mount "+v.s, v.pos)
	}
}

// tmpfs reads --tmpfs PATH[:OPTS].
func (d *dockerRun) tmpfs(_ string, v arg) {
	dst, opts, _ := strings.Cut(v.s, ":")
	d.tmpfsAt(dst, opts, v.pos)
}

// tmpfsAt records a tmpfs: the first writable one with a size is the
// scratch; a read-only one is a mask (mcpolicy's own cover /tmp, /run...);
// a writable one without a size is unbounded.
func (d *dockerRun) tmpfsAt(dst, opts string, pos schema.Pos) {
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
		d.e.flag(lint.FlagUnboundedTmpfs, v, pos)
		return
	}
	if d.p.Scratch == nil {
		d.p.Scratch = &compiler.Scratch{Target: path.Clean(dst), SizeBytes: n, Pos: pos}
	}
}

var bytesRE = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)\s*([kmgtpKMGTP]?)(?:i?[bB])?$`)

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
func (d *dockerRun) envVar(_ string, v arg) {
	name, val, has := strings.Cut(v.s, "=")
	d.addEnv(name, v.pos)
	if has {
		d.e.t.EnvPassed = append(d.e.t.EnvPassed, name)
		d.e.dangerousEnv(name, val, v.pos)
	}
	if has && looksLikeSecret(name, val) {
		d.e.flag(lint.FlagSecretInline, name, v.pos)
	}
}

func (d *dockerRun) addEnv(name string, pos schema.Pos) {
	for _, n := range d.p.Env {
		if n == name {
			return
		}
	}
	d.p.Env = append(d.p.Env, name)
	d.p.EnvPos = append(d.p.EnvPos, pos)
}

// envFile reads the names an --env-file passes; an unreadable one is
// reported, its names being unknown.
func (d *dockerRun) envFile(_ string, v arg) {
	f := d.e.localFile(v.s)
	if f == "" {
		d.envUnknown = true
		d.e.flag(lint.FlagUnknown, "--env-file "+v.s+d.e.notRead(), v.pos)
		return
	}
	fh, err := os.Open(f)
	if err != nil {
		d.envUnknown = true
		d.e.flag(lint.FlagUnknown, "--env-file "+v.s+" (unreadable)", v.pos)
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
		d.addEnv(strings.TrimSpace(name), v.pos)
		if has { // a value in the file; NAME alone comes from the engine's environment
			d.e.t.EnvPassed = append(d.e.t.EnvPassed, strings.TrimSpace(name))
		}
	}
}

func (d *dockerRun) network(_ string, v arg) {
	d.hasNetwork, d.netMode = true, v.s
	d.p.Network.Pos = v.pos
	if v.s != "none" {
		d.e.flag(lint.FlagNetwork, v.s, v.pos)
	}
}

// caps splits a capability list (podman takes commas) into names without
// the CAP_ prefix, upper case.
func caps(s string) []string {
	var out []string
	for _, c := range strings.Split(s, ",") {
		c = strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(c)), "CAP_")
		if c != "" {
			out = append(out, c)
		}
	}
	return out
}

func (d *dockerRun) capDrop(_ string, v arg) {
	for _, c := range caps(v.s) {
		if c == "ALL" {
			d.capDropAll = true
		}
	}
}

func (d *dockerRun) capAdd(_ string, v arg) {
	for _, c := range caps(v.s) {
		d.e.flag(lint.FlagCapAdd, c, v.pos)
	}
}

func (d *dockerRun) privileged(_ string, v arg) {
	if boolValue(v.s) {
		d.e.flag(lint.FlagPrivileged, "", v.pos)
	}
}

// securityOpt reads --security-opt KEY[=|:]VALUE.
func (d *dockerRun) securityOpt(_ string, v arg) {
	k, val, ok := strings.Cut(v.s, "=")
	if !ok {
		k, val, _ = strings.Cut(v.s, ":")
	}
	switch k {
	case "no-new-privileges":
		d.nnp = boolValue(val)
	case "seccomp":
		if val == "unconfined" {
			d.e.flag(lint.FlagSeccompUnconfined, val, v.pos)
		}
	case "apparmor":
		if val == "unconfined" {
			d.e.flag(lint.FlagAppArmorUnconf, val, v.pos)
		}
	case "label":
		if val == "disable" { // SELinux confinement off
			d.e.flag(lint.FlagUnknown, "--security-opt "+v.s, v.pos)
		}
	case "mask", "proc-opts":
	default: // systempaths=unconfined, unmask=..., anything else
		d.e.flag(lint.FlagUnknown, "--security-opt "+v.s, v.pos)
	}
}

// user reads --user USER[:GROUP]; a name that is not a number gives -1.
func (d *dockerRun) user(_ string, v arg) {
	d.hasUser = true
	if v.s == compiler.UIDPlaceholder+":"+compiler.GIDPlaceholder { // user: "invoker", resolved at spawn
		d.p.User, d.p.UserPos = compiler.User{UID: -1, GID: -1, Invoker: true}, v.pos
		d.p.Subtractions.NonRootUser = true
		return
	}
	u, g, hasG := strings.Cut(v.s, ":")
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
	d.p.UserPos = v.pos
	root := d.p.User.UID == 0
	d.p.Subtractions.NonRootUser = !root
	if root {
		d.e.flag(lint.FlagRootUser, v.s, v.pos)
	}
}

// namespace reads --pid/--ipc/--uts/--userns/--cgroupns; "host" shares
// the host's (Value: which namespace).
func (d *dockerRun) namespace(name string, v arg) {
	which := map[string]string{"pid": "pid", "ipc": "ipc", "uts": "uts", "userns": "user", "cgroupns": "cgroup"}[name]
	switch {
	case v.s == "host":
		d.e.flag(lint.FlagHostNamespace, which, v.pos)
	case name == "userns" && strings.HasPrefix(v.s, "keep-id"):
		d.keepID = true
	}
}

func (d *dockerRun) memory(_ string, v arg) {
	if n, ok := parseBytes(v.s); ok {
		d.p.Subtractions.MemoryBytes = n
		d.p.LimitsPos = v.pos
	}
}

func (d *dockerRun) pids(_ string, v arg) {
	if n, err := strconv.ParseInt(v.s, 10, 64); err == nil && n > 0 {
		d.p.Subtractions.Pids = n
		d.p.LimitsPos = v.pos
	}
}

func (d *dockerRun) cpus(_ string, v arg) {
	if f, err := strconv.ParseFloat(v.s, 64); err == nil && f > 0 {
		d.p.Subtractions.MilliCPUs = int64(math.Round(f * 1000))
		d.p.LimitsPos = v.pos
	}
}

// label keeps the plan hash mcpolicy puts on its containers.
func (d *dockerRun) label(_ string, v arg) {
	if k, val, ok := strings.Cut(v.s, "="); ok && k == docker.LabelPlan {
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

var imageName = regexp.MustCompile(`^([A-Za-z0-9.-]+(:[0-9]+)?/)?[a-z0-9]+([._-]+[a-z0-9]+)*(/[a-z0-9]+([._-]+[a-z0-9]+)*)*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@[a-z0-9]+:[A-Fa-f0-9]{32,})?$`)

// valueAsImage reports whether the word after a bare -e NAME, read as the
// image, was meant as NAME's value: it cannot be an image name (upper
// case, an = or a blank: a token, a sentence), or it is a plain word while
// the word after it looks like the image (a registry path or a tag).
func valueAsImage(img string, rest []arg) bool {
	if strings.Contains(img, "${") || strings.HasPrefix(img, "$") {
		return false
	}
	if !imageName.MatchString(img) {
		return true
	}
	if len(rest) == 0 || strings.ContainsAny(img, "/:@") {
		return false
	}
	next := rest[0].s
	return !strings.HasPrefix(next, "-") && !strings.HasPrefix(next, "/") && !strings.HasPrefix(next, ".") &&
		strings.ContainsAny(next, "/:") && imageName.MatchString(next)
}

// references reports whether an argument of the run names the variable
// (${NAME}, $NAME): a client that expands it there uses the entry's value.
func (d *dockerRun) references(name string) bool {
	for _, a := range d.args {
		if strings.Contains(a.s, "${"+name+"}") || strings.Contains(a.s, "${env:"+name+"}") || strings.Contains(a.s, "${"+name+":-") {
			return true
		}
		if i := strings.Index(a.s, "$"+name); i >= 0 {
			if j := i + 1 + len(name); j == len(a.s) || !isWordChar(a.s[j]) {
				return true
			}
		}
	}
	return false
}

func isWordChar(c byte) bool { return isLetter(c) || c >= '0' && c <= '9' || c == '_' }
