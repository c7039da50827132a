package lint

import (
	"path"
	"path/filepath"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/internal/lazyre"
	"github.com/mcpolicy/mcpolicy/internal/position"
)

// escapeRules flag what a container or a bwrap sandbox hands out that is a
// way out of it on its own: the host's devices, its kernel's file systems
// (/dev, /proc, /sys), its system configuration (/etc), the session's
// D-Bus and X11 sockets, and the engine's mandatory access control or
// masked paths switched off (issue 35).
func escapeRules() []*Rule {
	return []*Rule{
		{
			ID: "HOST_DEVICE", Name: "host-device", Severity: Error,
			Purpose:     "A container is given a host device (docker or podman --device), or a bwrap sandbox binds a host path with device access (--dev-bind, --dev-bind-try).",
			Rationale:   "A device node is the kernel's interface to hardware, not a file: /dev/sda is the whole disk under every file permission, /dev/mem and /dev/kmem the machine's memory, /dev/kvm and /dev/dri the kernel's drivers, a tty the user's terminal. bwrap's --dev-bind is the only bind that lets device nodes work; --bind and --ro-bind of the same path leave them unusable.",
			Remediation: "Drop --device; use bwrap's --dev /dev (a fresh, minimal /dev: null, zero, random, tty) instead of --dev-bind. A server that needs a device (a GPU) needs a waiver saying which and why.",
			Bad:         run("--device", "/dev/sda"),
			Good:        run(),
			check:       flagRule(readback.FlagHostDevice, "%s: a host device, under every file permission"),
		},
		{
			ID: "MOUNT_KERNEL_FS", Name: "kernel-fs-mount", Severity: Error,
			Purpose:     "A grant mounts the host's /dev, /proc or /sys, or a path below one (/dev/mem, /proc/sysrq-trigger, /sys/fs/cgroup), read-only or read-write. /dev/null, /dev/zero, /dev/random, /dev/urandom and /dev/fuse are not flagged; /dev/shm is MOUNT_SHARED_TMP's.",
			Rationale:   "These are the kernel's own interfaces, not folders: the host's /dev holds its raw disks and memory, /proc every host process (their environments, their open files through /proc/PID/root and fd) and the kernel's switches (/proc/sys, sysrq-trigger, core_pattern: a command the kernel runs as root), /sys the cgroups and drivers. An engine masks them in its own /proc and /sys for that reason; a bind of the host's undoes it, and read-only does not stop reading a process's memory or environment.",
			Remediation: "Remove the mount: the container has its own /proc, /sys and /dev. Pass a device the server needs as itself, with a waiver.",
			Bad:         run("-v", "/proc:/host/proc"),
			Good:        run(),
			check:       checkKernelFS,
		},
		{
			ID: "MOUNT_SYSTEM_CONFIG", Name: "system-config-mount", Severity: Error,
			Purpose:     "A grant mounts the host's /etc (read-only too), a store of the system's secrets below it (/etc/shadow, /etc/ssl/private, /etc/ssh, /etc/kubernetes, /etc/sudoers, /etc/wireguard, /etc/NetworkManager/system-connections...), or any path below /etc read-write.",
			Rationale:   "/etc is the host's configuration and holds its secrets: host keys, TLS private keys, a cluster's admin kubeconfig, Wi-Fi and VPN passwords, password hashes. Most are root-only, but a container's default user is root and a rootful engine's root reads them through a read-only bind (a bwrap sandbox runs as the invoking user, never root: its read-only bind of /etc, which every bwrap recipe has for ld.so.cache, resolv.conf and the CA certificates, is not flagged); the rest (hosts, the proxy and package-manager credentials some setups keep there) any user reads. Read-write, it writes what the host runs next as root: sudoers, cron, systemd units, ld.so.preload. This is an error, not a warning, for read-only too: a server that needs a file from /etc needs that one file (resolv.conf, localtime, ssl/certs), never the folder.",
			Remediation: "Mount the one file the server needs read-only (-v /etc/localtime:/etc/localtime:ro, /etc/ssl/certs), or bake it into the image.",
			Bad:         run("-v", "/etc:/host/etc:ro"),
			Good:        run("-v", "/etc/localtime:/etc/localtime:ro"),
			check:       checkSystemConfig,
		},
		{
			ID: "MOUNT_SESSION_SOCKET", Name: "session-socket-mount", Severity: Error,
			Purpose:     "A grant mounts the D-Bus session or system bus (/run/user/UID/bus, $XDG_RUNTIME_DIR/bus, /run/dbus, /var/run/dbus) or the X11 server's sockets or cookie (/tmp/.X11-unix, ~/.Xauthority), read-only too.",
			Rationale:   "These sockets run commands outside the sandbox: over the session bus, systemd --user (org.freedesktop.systemd1) starts any program as the user, and the desktop's portals and secret service hand out files and passwords; over the system bus, whatever polkit allows the user; over X11, keystrokes into any window, a terminal among them. connect(2) needs write permission on the socket file only, and a read-only bind does not take that away.",
			Remediation: "Remove the mount. A server that must talk to the desktop needs a filtering proxy (xdg-dbus-proxy) with the names it needs, and a waiver saying why.",
			Bad:         bwrapEntry("--unshare-all", "--new-session", "--die-with-parent", "--ro-bind", "/usr", "/usr", "--ro-bind", "/run/user/1000/bus", "/run/user/1000/bus", "--", "/usr/bin/server"),
			Good:        bwrapEntry("--unshare-all", "--new-session", "--die-with-parent", "--ro-bind", "/usr", "/usr", "--", "/usr/bin/server"),
			check:       checkSessionSocket,
		},
		{
			ID: "SECURITY_OPT_OFF", Name: "security-opt-off", Severity: Error,
			Purpose:     "A container switches off its SELinux label (--security-opt label=disable) or its masked system paths (systempaths=unconfined, podman's unmask=...).",
			Rationale:   "Like seccomp=unconfined and apparmor=unconfined (their own rules), each takes away one of the engine's default walls: label=disable runs the container unconfined by SELinux, the wall that stops a process escaping its namespaces from touching the host's files; systempaths=unconfined and unmask expose the /proc and /sys paths the engine hides (/proc/kcore, /proc/sysrq-trigger, /sys/firmware, /proc/sys writable), which reach the host's kernel.",
			Remediation: "Remove the --security-opt; relabel a bind for SELinux with :z or :Z instead of disabling labels.",
			Bad:         run("--security-opt", "label=disable"),
			Good:        run(),
			check:       flagRule(readback.FlagSecurityOff, "--security-opt %s: one of the engine's default walls off"),
		},
	}
}

// kernelFSSafe are the device nodes below /dev a mount of which hands out
// nothing of the host's.
var kernelFSSafe = map[string]bool{"/dev/null": true, "/dev/zero": true, "/dev/random": true, "/dev/urandom": true, "/dev/fuse": true}

// hostPathOf is a grant's host path as lint reads it, slash-separated.
func hostPathOf(t *readback.Target, p compiler.HostPath) string {
	if !hostBase(p.Base) {
		return ""
	}
	return path.Clean(filepath.ToSlash(hostFacts(t, p).Path))
}

// kernelFS says which of /dev, /proc, /sys holds p, "" for none.
func kernelFS(p string) string {
	if kernelFSSafe[p] || within(p, "/dev/shm") {
		return ""
	}
	for _, d := range []string{"/dev", "/proc", "/sys"} {
		if within(p, d) {
			return d
		}
	}
	return ""
}

func checkKernelFS(t *readback.Target, o Options, report reportFn) {
	for _, m := range mounts(t) {
		d := kernelFS(hostPathOf(t, m.Source))
		if d == "" || devBindAt(t, m.Pos) {
			continue
		}
		what := map[string]string{
			"/dev":  "the host's devices (raw disks, memory, terminals)",
			"/proc": "the host's processes and the kernel's switches (/proc/sys, sysrq-trigger)",
			"/sys":  "the host's kernel objects (cgroups, drivers, firmware)",
		}[d]
		report(m.Pos, "mounts %s (%s) at %s: %s", m.Source, m.Mode, m.Target, what)
	}
}

// devBindAt reports whether a HOST_DEVICE flag (bwrap --dev-bind) is at
// pos: the mount it binds is that one finding.
func devBindAt(t *readback.Target, pos position.Pos) bool {
	for _, f := range t.Flags {
		if f.Kind == readback.FlagHostDevice && f.Pos == pos {
			return true
		}
	}
	return false
}

// systemSecrets are the stores of the system's secrets below /etc.
var systemSecrets = []string{"/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/sudoers.d", "/etc/ssh", "/etc/ssl/private",
	"/etc/pki/tls/private", "/etc/kubernetes", "/etc/rancher", "/etc/wireguard", "/etc/NetworkManager/system-connections",
	"/etc/docker", "/etc/containers/auth.json", "/etc/letsencrypt"}

func checkSystemConfig(t *readback.Target, o Options, report reportFn) {
	for _, m := range mounts(t) {
		p := hostPathOf(t, m.Source)
		switch {
		case (p == "/etc" || p == "/private/etc") && m.Mode == compiler.ReadOnly && bwrapLauncher(t):
			// bwrap runs as the invoking user, never root: its root-only
			// files stay unreadable, and every bwrap recipe binds /etc
			// read-only for ld.so.cache, resolv.conf and the CA certificates.
		case p == "/etc" || p == "/private/etc":
			report(m.Pos, "mounts the host's /etc (%s) at %s: the system's configuration and its secrets (host keys, TLS keys, password hashes)", m.Mode, m.Target)
		case within(p, "/etc") && m.Mode == compiler.ReadWrite:
			report(m.Pos, "mounts %s (rw) at %s: the host's configuration, writable", m.Source, m.Target)
		default:
			for _, s := range systemSecrets {
				if within(p, s) || within(s, p) && within(p, "/etc") {
					report(m.Pos, "mounts %s (%s) at %s: the system's secrets (%s)", m.Source, m.Mode, m.Target, s)
					break
				}
			}
		}
	}
}

// sessionSocket is a path that is, or holds, a user's D-Bus session bus
// below their runtime folder.
var sessionBus = lazyre.New(`^((/var)?/run/user/([0-9]+|\$UID|\$\{UID\})|\$XDG_RUNTIME_DIR|\$\{(env:)?XDG_RUNTIME_DIR(:-[^}]*)?\})/bus$`)

// sessionSocket says what a host path is when it is a D-Bus or X11 socket
// or the folder holding them.
func sessionSocket(p string) (string, bool) {
	switch {
	case sessionBus.MatchString(p):
		return "the D-Bus session bus (systemd --user starts any program as the user)", true
	case within(p, "/run/dbus"), within(p, "/var/run/dbus"):
		return "the D-Bus system bus", true
	case within(p, "/tmp/.X11-unix"), path.Base(p) == ".Xauthority":
		return "the X11 server (keystrokes into any window)", true
	}
	return "", false
}

func checkSessionSocket(t *readback.Target, o Options, report reportFn) {
	for _, m := range mounts(t) {
		if what, ok := sessionSocket(hostPathOf(t, m.Source)); ok {
			report(m.Pos, "mounts %s (%s) at %s: %s, a way out of the sandbox (read-only does not stop a connect)", m.Source, m.Mode, m.Target, what)
		}
	}
}

// engineSocketBase reports whether a file name is a container engine's or
// its runtime's API socket (emit/argv.EngineSockets: lint does not import
// the emitters).
func engineSocketBase(b string) bool {
	switch b {
	case "docker.sock", "podman.sock", "containerd.sock", "crio.sock", "buildkitd.sock":
		return true
	}
	return strings.HasSuffix(b, "docker_engine")
}

// escapeMount reports whether another escape rule reports the mount, so
// BIND_RW need not.
func escapeMount(t *readback.Target, p compiler.HostPath) bool {
	h := hostPathOf(t, p)
	_, session := sessionSocket(h)
	return kernelFS(h) != "" || within(h, "/etc") || session
}
