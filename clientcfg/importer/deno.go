package importer

import (
	"fmt"
	"net"
	"strings"
)

// denoPerm maps deno's permission flags, long and short, to what they
// allow.
var denoPerm = map[string]string{
	"--allow-read": "read", "-R": "read", "--allow-write": "write", "-W": "write",
	"--allow-net": "net", "-N": "net", "--allow-env": "env", "-E": "env",
}

// deno imports `deno run [FLAGS] SCRIPT ARGS`: its permission flags become
// grants (a scoped --allow-read a read-only mount, --allow-write a
// read-write one, --allow-net=HOST:PORT an egress destination,
// --allow-env=NAME a name); -A (--allow-all) and an unscoped read or write
// are refused: no policy import writes grants the whole filesystem.
func (d *draft) deno(words []string) run {
	d.pack("deno", "the deno runner: its module cache (DENO_DIR) read-only")
	d.scratch("deno writes temporary files, and HOME is the scratch")
	cmd := append([]string{}, words...)
	i := 1
	if i < len(words) && words[i] == "run" {
		i++
	}
	for ; i < len(words) && strings.HasPrefix(words[i], "-"); i++ {
		if refused := d.denoFlag(words[i]); refused != "" {
			d.s.Skipped = refused
			return run{}
		}
	}
	d.lookPath(cmd, "")
	d.p.CommandWhy = append(d.p.CommandWhy, "deno, as the entry runs it: its own permission flags stay, and each became the grant beside it.")
	r := run{command: cmd, argStart: i, script: true}
	if i < len(words) && !pathLike(words[i]) {
		r.script = false // jsr:, npm:, https:: from deno's cache
		d.s.Notes = append(d.s.Notes, fmt.Sprintf("%s comes from deno's module cache: run the entry once unconfined so deno caches it, or the sandbox (no network) cannot fetch it", words[i]))
	}
	return r
}

// denoFlag turns one flag into grants; it returns why import refuses
// the entry ("" when it does not).
func (d *draft) denoFlag(flag string) string {
	name, list, scoped := strings.Cut(flag, "=")
	if name == "-A" || name == "--allow-all" {
		return "deno " + flag + " allows everything (every file, host and variable): import writes no policy that wide; list what it needs (--allow-read=DIR, --allow-net=HOST:PORT...), then import again"
	}
	kind := denoPerm[name]
	if kind == "" {
		if strings.HasPrefix(name, "--allow-") {
			d.s.Notes = append(d.s.Notes, "deno "+flag+": no grant of mcpolicy's matches it; the sandbox still applies")
		}
		return ""
	}
	if !scoped || list == "" {
		switch kind {
		case "read", "write":
			return fmt.Sprintf("deno %s allows every file to be %s: import writes no policy that wide; scope it (%s=DIR), then import again", flag, map[string]string{"read": "read", "write": "written"}[kind], name)
		case "net":
			d.s.Notes = append(d.s.Notes, "deno "+flag+" allows every host: import grants none (no network); add network.allow entries for what it must reach")
		case "env":
			d.s.Notes = append(d.s.Notes, "deno "+flag+" reads every variable: import passes none; add the names it needs to env")
		}
		return ""
	}
	for _, v := range strings.Split(list, ",") {
		switch kind {
		case "read", "write":
			d.denoPath(v, kind == "write", flag)
		case "net":
			dest := v
			if _, _, err := net.SplitHostPort(v); err != nil {
				dest = v + ":443"
				d.s.Notes = append(d.s.Notes, fmt.Sprintf("deno --allow-net=%s allows every port of %s: import grants 443 only", v, v))
			}
			d.addAllow(dest, "deno "+name+" lists it")
		case "env":
			d.p.Env = append(d.p.Env, Item{v, "deno " + name + " lists it"})
		}
	}
	return ""
}

// name is a flag without its value.
func name(flag string) string {
	n, _, _ := strings.Cut(flag, "=")
	return n
}

// denoPath grants one path a permission flag lists.
func (d *draft) denoPath(raw string, rw bool, flag string) {
	f := d.l.File(raw)
	if f == "" || !exists(f) {
		d.s.Notes = append(d.s.Notes, fmt.Sprintf("deno %s lists %s, which does not exist here: not granted", flag, d.o.tilde(raw)))
		return
	}
	how := "read-only"
	if rw {
		how = "read-write"
	}
	d.addMount(f, rw, fmt.Sprintf("deno %s lists %s: %s", name(flag), d.o.tilde(f), how))
}
