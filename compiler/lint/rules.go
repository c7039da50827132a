package lint

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/internal/backendtraits"
	"github.com/mcpolicy/mcpolicy/internal/position"
	"github.com/mcpolicy/mcpolicy/internal/protect"
)

type reportFn = func(pos position.Pos, format string, args ...any)

// policy and client build examples.
func policy(body string) Example {
	return Example{Kind: "policy", Text: "version: \"v1\"\nservers: s: {\n\t" + strings.ReplaceAll(strings.TrimSpace(body), "\n", "\n\t") + "\n}\n"}
}

func dockerRun(args ...string) Example {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = fmt.Sprintf("%q", a)
	}
	return Example{Kind: "client", Text: `{"mcpServers": {"s": {"command": "` + backendtraits.Program(backendtraits.Docker) + `", "args": ["run", "-i", "--rm", ` + strings.Join(q, ", ") + `]}}}`}
}

// bwrapEntry is a client config starting a server under bwrap with args.
func bwrapEntry(args ...string) Example {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = fmt.Sprintf("%q", a)
	}
	return Example{Kind: "client", Text: `{"mcpServers": {"s": {"command": "` + backendtraits.Program(backendtraits.Bwrap) + `", "args": [` + strings.Join(q, ", ") + `]}}}`}
}

// dockerEntry is a client entry running docker with args and the extra
// members (JSON text) in the entry.
func dockerEntry(members string, args ...string) Example {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = fmt.Sprintf("%q", a)
	}
	return Example{Kind: "client", Text: `{"mcpServers": {"s": {"command": "` + backendtraits.Program(backendtraits.Docker) + `", "args": ["run", "-i", "--rm", ` + strings.Join(q, ", ") + `], ` + members + `}}}`}
}

// confined is the set of docker flags that make a run narrow: examples
// start from it and add the one mistake the rule is about.
var confined = []string{"--network", "none", "--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--user", "1000:1000"}

func run(extra ...string) Example {
	return dockerRun(append(append(append([]string{}, confined...), extra...), "img:1")...)
}

func without(flag string, n int, extra ...string) Example {
	var args []string
	for i := 0; i < len(confined); i++ {
		if confined[i] == flag {
			i += n - 1
			continue
		}
		args = append(args, confined[i])
	}
	return dockerRun(append(append(args, extra...), "img:1")...)
}

func flagRule(kind readback.FlagKind, msg string) func(t *readback.Target, o Options, report reportFn) {
	return func(t *readback.Target, o Options, report reportFn) {
		for _, f := range t.Flags {
			switch {
			case f.Kind != kind:
			case strings.Contains(msg, "%s"):
				report(f.Pos, msg, f.Value)
			default:
				report(f.Pos, "%s", msg)
			}
		}
	}
}

// flagRules is flagRule for a rule several kinds of flag report, in the
// order of the target's flags.
func flagRules(msg string, kinds ...readback.FlagKind) func(t *readback.Target, o Options, report reportFn) {
	return func(t *readback.Target, o Options, report reportFn) {
		for _, f := range t.Flags {
			if slices.Contains(kinds, f.Kind) {
				report(f.Pos, msg, f.Value)
			}
		}
	}
}

// machine resolves a target's host paths.
func machine(t *readback.Target) compiler.Machine {
	return compiler.Machine{ProjectRoot: t.ProjectRoot, Home: t.Home}
}

// mounts returns each mount with its host path: resolved where its base is
// known, else the placeholder (see hostOf).
func mounts(t *readback.Target) []struct {
	compiler.Mount
	Host string
} {
	if t.Plan == nil {
		return nil
	}
	out := make([]struct {
		compiler.Mount
		Host string
	}, 0, len(t.Plan.Mounts))
	for _, mt := range t.Plan.Mounts {
		out = append(out, struct {
			compiler.Mount
			Host string
		}{mt, hostOf(t, mt.Source)})
	}
	return out
}

func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// builtinRules are the rules declared in this file, family by family;
// rules adds those declared beside the code they belong to.
func builtinRules() []*Rule {
	var rs []*Rule
	families := [][]*Rule{planRules(), mountRules(), networkRules(), grantRules(),
		containerRules(), sandboxRules(), entryRules(), argvRules(), imageRules(), clientRules()}
	for _, family := range families {
		rs = append(rs, family...)
	}
	return append(rs, symlinkRule())
}

// planRules judge the plan as a whole: does it build, is it small enough
// to review.
func planRules() []*Rule {
	return []*Rule{
		{
			ID: "UNBUILDABLE", Name: "unbuildable", Severity: Error,
			Purpose:     "A backend the server lists cannot enforce its plan: mcpolicy build refuses it.",
			Rationale:   "A policy that does not build confines nothing: its client entries cannot be written, or start what they started before. Lint must not call it clean.",
			Remediation: "Change what the backend refuses (the message says what and why), or drop that backend from \"backends\".",
			Bad:         policy("command: [\"/bin/true\"]\nbackends: [\"landlock\"]\nlimits: {memory: \"512m\"}"),
			Good:        policy("command: [\"/bin/true\"]\nbackends: [\"landlock\"]"),
			check: func(t *readback.Target, o Options, report reportFn) {
				for _, p := range t.Unbuildable {
					report(p.Pos, "%s", p.Msg)
				}
			},
		},
		{
			ID: "GRANT_COUNT", Name: "grant-count", Severity: Warning,
			Purpose:     "A server has more grants than a reviewer can hold at once (default 4; --max-grants); the tools section's entries, which narrow what the model is offered, are not counted here.",
			Rationale:   "Confinement is read, not copied: start from nothing and add back only what the program cannot run without, keeping the additions few enough to review together.",
			Remediation: "Drop grants the server does not need, or split it into servers with fewer grants each; raise --max-grants only deliberately.",
			Bad:         policy(`image: "x:1"` + "\nenv: [\"A\", \"B\", \"C\"]\nmounts: [{source: \".\", target: \"/w\"}, {source: \"docs\", target: \"/d\"}]"),
			Good:        policy(`image: "x:1"` + "\nmounts: [{source: \".\", target: \"/w\"}]"),
			check: func(t *readback.Target, o Options, report reportFn) {
				if t.Plan == nil {
					return
				}
				// The tool surface's entries are counted grants, but they
				// only narrow what the model is offered: listing four tools
				// by name is narrower than "*", and must not cost more here.
				gs := slices.DeleteFunc(t.Plan.Grants(), func(g compiler.Grant) bool {
					return g.Kind == compiler.GrantTool || g.Kind == compiler.GrantToolArg
				})
				if len(gs) > o.MaxGrants {
					report(t.Pos, "%s, more than %d", compiler.GrantSummary(gs), o.MaxGrants)
				}
			},
		},
	}
}

// mountRules flag mounts that hand over more than the project: the root, a
// home, a parent, a credential store, a shared temporary folder.
func mountRules() []*Rule {
	return []*Rule{
		{
			ID: "MOUNT_ROOT", Name: "root-mount", Severity: Error,
			Purpose:     "The host's root folder, or a whole Windows drive (C:\\, C:/), is mounted.",
			Rationale:   "A mount of / (or of a drive) hands the process every file the user can read: the confinement then confines nothing.",
			Remediation: "Mount the one folder the server works on.",
			Bad:         policy(`image: "x:1"` + "\nmounts: [{source: \"/\", target: \"/host\"}]"),
			Good:        policy(`image: "x:1"` + "\nmounts: [{source: \".\", target: \"/w\"}]"),
			check: func(t *readback.Target, o Options, report reportFn) {
				for _, m := range mounts(t) {
					if f := hostFacts(t, m.Source); f.Path == "/" {
						report(m.Pos, "mounts the host's / (%s) at %s", m.Mode, m.Target)
					} else if f.Root {
						report(m.Pos, "mounts the whole drive %s (%s) at %s", m.Source, m.Mode, m.Target)
					}
				}
			},
		},
		{
			ID: "MOUNT_HOME", Name: "home-mount", Severity: Error,
			Purpose:     "A home folder is mounted, on any platform (~, $HOME, /home/NAME, /Users/NAME, C:\\Users\\NAME), or a folder holding the homes (/home, /Users, C:\\Users).",
			Rationale:   "Home holds every credential store, every other project and the shell's history: a home mount is a parent mount of everything the user owns.",
			Remediation: "Mount the project folder, and any one folder below home the server needs, read-only.",
			Bad:         policy(`image: "x:1"` + "\nmounts: [{source: \"~\", target: \"/home/me\"}]"),
			Good:        policy(`image: "x:1"` + "\nmounts: [{source: \"~/.cache/x\", target: \"/cache\"}]"),
			check: func(t *readback.Target, o Options, report reportFn) {
				for _, m := range mounts(t) {
					switch f := hostFacts(t, m.Source); {
					case f.IsHome():
						report(m.Pos, "mounts the home folder %s (%s) at %s", m.Source, m.Mode, m.Target)
					case f.HoldsHomes && !f.Root:
						report(m.Pos, "mounts %s (%s) at %s, the folder holding the home folders", m.Source, m.Mode, m.Target)
					}
				}
			},
		},
		{
			ID: "MOUNT_PARENT", Name: "parent-mount", Severity: Error,
			Purpose: "A folder above the project is mounted.",
			Rationale: "A parent of the project holds its siblings: other repositories, their .env files, their credentials. The server asked for one project. " +
				"It is the tempting fix for a symlink farm (a pnpm package's node_modules linking into the workspace's store above it): the links resolve, and everything beside them comes along. " +
				"When links below the project lead into the parent outside the project, to targets no narrower mount holds, the finding says so as `mcpolicy diff` does (MOUNT_MOVED_UP: a parent holds more) and writes the two narrower mounts, the project and the store (read-only), at the paths they have under the parent's target: every path the server sees stays as it was, and the links resolve as they did. " +
				"Only a mount strictly above the project root (the policy's folder, or the folder given to lint) is flagged: the project root mounted as itself, and a monorepo's own policy mounting its root, are not.",
			Remediation: "Mount the project folder itself; grant a dependency store above it read-only and on its own, if the toolchain needs it (for a symlink farm the finding writes both mounts).",
			Bad:         policy(`image: "x:1"` + "\nmounts: [{source: \"${PROJECT_PARENT}\", target: \"/w\"}]"),
			Good:        policy(`image: "x:1"` + "\nmounts: [{source: \".\", target: \"/w\"}]"),
			check: func(t *readback.Target, o Options, report reportFn) {
				if t.ProjectRoot == "" { // unknown: ${workspaceFolder}/.. as written
					for _, m := range mounts(t) {
						if m.Source.Base == compiler.ProjectRoot && strings.Trim(strings.ReplaceAll(m.Source.Rel, "..", ""), "/") == "" && m.Source.Rel != "." {
							report(m.Pos, "mounts %s (%s), a parent of the project folder", m.Source, m.Mode)
						}
					}
					return
				}
				root := filepath.Clean(t.ProjectRoot)
				ms := sandboxMounts(t)
				for i, m := range ms {
					if m.host == root || !within(root, m.host) {
						continue
					}
					if dir, ok := onMachine(t, root); ok && t.Plan != nil {
						if msg, ok := farmParent(t, o, dir, ms, i); ok {
							report(m.m.Pos, "%s", msg)
							continue
						}
					}
					report(m.m.Pos, "mounts %s (%s), a parent of the project folder %s", m.m.Source, m.m.Mode, root)
				}
			},
		},
		{
			ID: "MOUNT_CREDENTIALS", Name: "credential-mount", Severity: Error,
			Purpose:     "A grant covers a credential store (~/.ssh, ~/.aws, ~/.gnupg, ~/.config/gcloud, ~/.kube, ~/.docker/config.json, ~/.netrc, ~/.npmrc, ~/.pypirc, ~/.config/gh, ~/.claude, Keychains...) of any home folder (~, /home/NAME, /Users/NAME, C:\\Users\\NAME), or holds one.",
			Rationale:   "These files are what an attacker wants from a compromised dependency; inside the boundary, the kernel will hand them over.",
			Remediation: "Mount a narrower folder, or pass the one token the server needs by name (env).",
			Bad:         policy(`image: "x:1"` + "\nmounts: [{source: \"~/.aws\", target: \"/aws\"}]"),
			Good:        policy(`image: "x:1"` + "\nenv: [\"AWS_PROFILE\"]"),
			check: func(t *readback.Target, o Options, report reportFn) {
				for _, m := range mounts(t) {
					if hit := hostFacts(t, m.Source).Stores(); len(hit) > 0 {
						verb := "readable"
						if m.Mode == compiler.ReadWrite {
							verb = "readable and writable"
						}
						report(m.Pos, "mount %s makes credential stores %s: %s", m.Source, verb, strings.Join(hit, ", "))
					}
				}
			},
		},
		{
			ID: "MOUNT_SHARED_TMP", Name: "shared-tmp-mount", Severity: Error,
			Purpose:     "A grant mounts a folder every program of the machine or of a user shares: /tmp, /var/tmp, /dev/shm, /run, /var/run, a user's runtime folder (/run/user/UID, $XDG_RUNTIME_DIR) or $TMPDIR. Read-only or read-write: a read-only bind does not stop a connect to the sockets in it. A folder below one (/tmp/myproject) is not flagged.",
			Rationale:   "These folders hold other programs' unix sockets (X11's /tmp/.X11-unix, tmux's /tmp/tmux-UID, ssh-agent's /tmp/ssh-*; the session's D-Bus, Wayland, gpg-agent and systemd --user in /run/user/UID; the engine's docker.sock in /run) and their temporary files, mcpolicy's own among them: `mcpolicy prove` and `mcpolicy run` refuse to start when TMPDIR or their socket folder lies inside a read-write grant. A socket is a way out of the sandbox: ssh-agent signs with the user's keys, tmux and X11 type into the user's terminals, systemd --user starts any command, the engine starts a container with / mounted. connect(2) to a unix socket needs only search permission on its folders and write permission on the socket file, and a read-only bind does not take that away (connect checks the socket file's permission bits, never whether its mount is read-only): read-only, the server still reads every file it may and reaches every socket. Read-write, it can also replace them: plant a socket, a file or a link where another program expects its own.",
			Remediation: "Mount a private folder instead: a bounded scratch tmpfs (a policy's `scratch: {target: \"/tmp\", size: \"64m\"}`, docker --tmpfs /tmp:size=64m or --shm-size, bwrap --size N --tmpfs /tmp), or a folder of the project or one of its own (/tmp/myproject). For a socket the server really needs, mount that one socket, not the folder holding it (never the D-Bus bus or the X11 socket: MOUNT_SESSION_SOCKET, they run commands on the host); if it must stay, waive the finding with the reason.",
			Bad:         run("-v", "/tmp:/tmp"),
			Good:        run("--tmpfs", "/tmp:size=64m"),
			check:       checkSharedTmp,
		},
	}
}

// networkRules flag what the server can reach: an open or shared network,
// wide or private egress entries.
func networkRules() []*Rule {
	return []*Rule{
		{
			ID: "NETWORK_OPEN", Name: "network-open", Severity: Warning,
			Purpose:     "The server can reach the network.",
			Rationale:   "--network none is the first flag people remove; without it every secret inside the boundary is one request away from leaving.",
			Remediation: "Keep network \"none\"; when the server must reach an API, allow exactly that host and port.",
			Bad:         policy(`image: "x:1"` + "\nnetwork: allow: [\"api.github.com:443\"]"),
			Good:        policy(`image: "x:1"`),
			check: func(t *readback.Target, o Options, report reportFn) {
				if open, dests := policyEgress(t); open && len(dests) > 0 {
					// any one entry opens it: point at the first written
					report(firstAllowPos(t.Plan.Network), "network open: egress to %s", egressPhrase(dests))
				} else if open {
					report(t.Plan.Network.Pos, "network is %s", t.Plan.Network.Mode)
				}
				for _, f := range t.Flags {
					if f.Kind == readback.FlagNetwork && f.Value != "host" {
						report(f.Pos, "network %q: the container reaches the network", f.Value)
					}
				}
			},
		},
		{
			ID: "NETWORK_HOST", Name: "host-network", Severity: Error,
			Purpose:     "The container shares the host's network namespace (--network host).",
			Rationale:   "On the host network the server reaches every service listening on the host's loopback: databases, debuggers, the MCP client itself.",
			Remediation: "Use --network none.",
			Bad:         without("--network", 2, "--network", "host"),
			Good:        run(),
			check: func(t *readback.Target, o Options, report reportFn) {
				for _, f := range t.Flags {
					if f.Kind == readback.FlagNetwork && f.Value == "host" {
						report(f.Pos, "--network host: the host's loopback services are reachable")
					}
				}
			},
		},
		{
			ID: "EGRESS_WILDCARD", Name: "egress-wildcard", Severity: Warning,
			Purpose:     "An egress allowlist entry is a wildcard (*.domain:port): it allows every name under the domain.",
			Rationale:   "A wildcard trusts whoever controls any name below the domain. Under a shared suffix (*.github.io, *.s3.amazonaws.com, *.herokuapp.com, *.cloudfront.net) anyone can register one and receive what the server sends; under your own domain a forgotten or dangling subdomain does the same.",
			Remediation: "List the exact hosts the server calls (api.example.com:443). Keep a wildcard only for a domain whose every name you control, and waive the finding with that reason.",
			Bad:         policy(`image: "x:1"` + "\nnetwork: allow: [\"*.example.com:443\"]"),
			Good:        policy(`image: "x:1"` + "\nnetwork: allow: [\"api.example.com:443\"]"),
			check:       checkEgressWildcard,
		},
		{
			ID: "EGRESS_WILDCARD_APEX", Name: "egress-wildcard-apex", Severity: Info,
			Purpose:     "A wildcard entry (*.example.com:443) is listed without its apex (example.com:443), which it does not match.",
			Rationale:   "A wildcard matches the names below a domain, never the domain itself: *.example.com allows api.example.com, not example.com. It is a common pitfall: the server's calls to the apex are refused at run time, which looks like a network fault rather than a policy one.",
			Remediation: "If the server calls the apex, list it too (example.com:443); if it does not, waive the finding saying so.",
			Bad:         policy(`image: "x:1"` + "\nnetwork: allow: [\"*.example.com:443\"]"),
			Good:        policy(`image: "x:1"` + "\nnetwork: allow: [\"*.example.com:443\", \"example.com:443\"]"),
			check:       checkEgressWildcardApex,
		},
		{
			ID: "EGRESS_PRIVATE", Name: "egress-private", Severity: Error,
			Purpose:     "An egress allowlist entry names a loopback, private, link-local or carrier-grade NAT address (127.0.0.1, 10.x, 192.168.x, 169.254.169.254...).",
			Rationale:   "The proxy refuses private addresses unless a rule names one. Such a rule lets the server reach, through the proxy, the host's own services (databases and debuggers on loopback), the LAN's, or the cloud metadata endpoint (169.254.169.254) and the instance credentials it hands out.",
			Remediation: "Remove the entry and allow the public name the server calls. If it truly needs one local service, keep that one address and port and waive the finding with the reason; never allow the metadata address.",
			Bad:         policy(`image: "x:1"` + "\nnetwork: allow: [\"169.254.169.254:80\"]"),
			Good:        policy(`image: "x:1"` + "\nnetwork: allow: [\"api.github.com:443\"]"),
			check:       checkEgressPrivate,
		},
	}
}

// grantRules flag what a grant lets through beside what it names:
// protected names left writable, secrets beside egress, an unbounded
// tmpfs, the engine's socket.
func grantRules() []*Rule {
	return []*Rule{
		{
			ID: "RW_UNPROTECTED", Name: "rw-unprotected", Severity: Error,
			Purpose:     "A read-write mount leaves a protected name writable (.git, the policies and .mcpolicy, client configs such as .mcp.json, .claude, .vscode, .env*), or is itself inside one.",
			Rationale:   "Inside a writable project a server can rewrite .git (a push remote, core.fsmonitor, a hook), its own policy or the .mcpolicy artefacts the next launch runs, or add an MCP server to a client config: all inside the boundary, all code that runs later outside it. A bind through a symlink into one of them is the same exposure.",
			Remediation: "Keep the default protections (do not `unprotect`), or mount the project read-only. A server that must write .git (a git server) is granted it with `unprotect: [\".git\"]`, and this finding is waived with the reason.",
			Bad:         withFiles(policy(`image: "x:1"`+"\nmounts: [{source: \".\", target: \"/w\", mode: \"rw\"}]\nunprotect: [\".git\"]"), ".git/config", "[core]"),
			Good:        withFiles(policy(`image: "x:1"`+"\nmounts: [{source: \".\", target: \"/w\", mode: \"rw\"}]"), ".git/config", "[core]"),
			check:       checkRWUnprotected,
		},
		{
			ID: "SECRETS_WITH_EGRESS", Name: "secrets-with-egress", Severity: Error,
			Purpose:     "Secret files (.env*, *.pem, *.key, id_*) are readable inside a grant while the server can reach the network (an allowlist included).",
			Rationale:   "A process that can read a secret and reach the network can send it: that is the exfiltration path, and no filesystem rule closes it. An allowlist narrows where data can go, not whether it leaves: an allowed API that accepts writes (an issue, a gist, a paste) carries it out.",
			Remediation: "Keep network none, hide them in the mount (`hide: [\".env*\"]`: masked at spawn, EACCES), or move the secrets out of the mounted folder (or mount a narrower one).",
			Bad:         withFiles(policy(`image: "x:1"`+"\nmounts: [{source: \".\", target: \"/w\"}]\nnetwork: allow: [\"api.github.com:443\"]"), ".env", "TOKEN=x"),
			Good:        withFiles(policy(`image: "x:1"`+"\nmounts: [{source: \".\", target: \"/w\"}]"), ".env", "TOKEN=x"),
			check: func(t *readback.Target, o Options, report reportFn) {
				open, dests := policyEgress(t)
				if !open && !hasFlag(t, readback.FlagNetwork) {
					return
				}
				via := "the open network"
				if len(dests) > 0 {
					via = "egress to " + egressPhrase(dests)
				}
				// at the mount: it holds the secrets, and each mount is its own finding
				for _, m := range mounts(t) {
					// A hidden one is masked at spawn: not readable.
					secrets := slices.DeleteFunc(slices.Clone(o.fs.secrets(t, m.Host)), func(s string) bool { _, h := m.Hides(s); return h })
					if len(secrets) > 0 {
						report(m.Pos, "mount %s holds secrets that %s could carry away: %s", m.Target, via, strings.Join(secrets, ", "))
					}
				}
			},
		},
		{
			ID: "ENV_SECRET_NOT_CREDENTIAL", Name: "env-secret-not-credential", Severity: Warning,
			Purpose:     "A policy passes a variable whose name says secret (token, key, secret, password...) through env to a server with an egress allowlist, on a backend whose egress proxy can inject it (bwrap, docker, podman, kubernetes).",
			Rationale:   "Passed through, the value enters the sandbox: the server can send it to any host its allowlist reaches, print it into a tool result the model reads, or write it into a read-write grant. As a credential, the server holds a placeholder and mcpolicy's egress proxy puts the value in its place on requests to the destinations it is bound to alone (docs/credentials.md).",
			Remediation: "Move the name from env to credentials, bound to the host that takes it: credentials: GITHUB_TOKEN: to: [\"api.github.com:443\"] (the value is read from the same variable at spawn). Waive the finding for a server that must hold the value itself (it signs requests with it, or speaks a protocol other than HTTP).",
			Bad:         policy(`image: "x:1"` + "\nenv: [\"GITHUB_TOKEN\"]\nnetwork: allow: [\"api.github.com:443\"]"),
			Good:        policy(`image: "x:1"` + "\nnetwork: allow: [\"api.github.com:443\"]\ncredentials: GITHUB_TOKEN: to: [\"api.github.com:443\"]"),
			check:       checkEnvSecretNotCredential,
		},
		{
			ID: "TMPFS_UNBOUNDED", Name: "unbounded-tmpfs", Severity: Error,
			Purpose:     "A tmpfs has no size bound.",
			Rationale:   "A scratch tmpfs is a repair for --read-only, not a way to fill the host's memory.",
			Remediation: "Give every --tmpfs a size= option (a policy's scratch always has one).",
			Bad:         run("--tmpfs", "/tmp"),
			Good:        run("--tmpfs", "/tmp:size=64m"),
			check:       flagRule(readback.FlagUnboundedTmpfs, "tmpfs %s has no size bound"),
		},
		{
			ID: "DOCKER_SOCKET", Name: "docker-socket", Severity: Error,
			Purpose:     "The container engine's socket is mounted.",
			Rationale:   "Whoever talks to the engine's socket can start a privileged container with / mounted: it is root on the host.",
			Remediation: "Never mount the socket into an MCP server; give a container-managing server its own, restricted API.",
			Bad:         run("-v", "/var/run/docker.sock:/var/run/docker.sock"),
			Good:        run(),
			check: func(t *readback.Target, o Options, report reportFn) {
				for _, f := range t.Flags {
					if f.Kind == readback.FlagDockerSocket {
						report(f.Pos, "mounts the engine socket %s: root on the host", f.Value)
					}
				}
				for _, m := range mounts(t) {
					if base := filepath.Base(m.Host); engineSocketBase(base) && !hasFlag(t, readback.FlagDockerSocket) {
						report(m.Pos, "mounts the engine socket %s: root on the host", m.Host)
					}
				}
			},
		},
	}
}

// containerRules flag a container entry's flags that give confinement
// back: privileges, capabilities, root, host namespaces, no seccomp or
// AppArmor.
func containerRules() []*Rule {
	return []*Rule{
		{
			ID: "PRIVILEGED", Name: "privileged", Severity: Error,
			Purpose: "The container runs --privileged.", Rationale: "--privileged gives every capability, every device and no seccomp or AppArmor profile: nothing is confined.",
			Remediation: "Remove --privileged.", Bad: run("--privileged"), Good: run(),
			check: flagRule(readback.FlagPrivileged, "--privileged: every capability and device, no seccomp"),
		},
		{
			ID: "CAP_ADD", Name: "cap-add", Severity: Error,
			Purpose: "The container adds a capability back.", Rationale: "Capabilities are the routes by which a process regains authority; each one added reopens a route.",
			Remediation: "Remove --cap-add; if the server truly needs one, say why in a waiver.", Bad: run("--cap-add", "SYS_ADMIN"), Good: run(),
			check: flagRule(readback.FlagCapAdd, "--cap-add %s"),
		},
		{
			ID: "CONTAINER_UNHARDENED", Name: "unhardened-container", Severity: Warning,
			Purpose:     "A container entry leaves out the hardening flags: --cap-drop ALL, --security-opt no-new-privileges, --read-only, a non-root --user. One finding per entry lists the missing ones.",
			Rationale:   "Each missing flag leaves a route open a server does not need: docker's default capabilities (CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_SETUID...), setuid binaries that raise privileges again, a writable image the server can change for its next run, uid 0 inside the namespace where file modes no longer apply. They matter once something else is wrong, so they are one warning together, below the grants that are the real exposure (a home mount, the engine socket, a token inline); an explicit --user root is ROOT_USER on its own.",
			Remediation: "Add the flags the finding lists: --cap-drop ALL --security-opt no-new-privileges --read-only (with a bounded --tmpfs where the server must write) --user 1000:1000; an entry from `mcpolicy client` has them all.",
			Bad:         dockerRun("--network", "none", "img:1"),
			Good:        run(),
			Aliases:     []string{"CAP_DROP_MISSING", "NO_NEW_PRIVILEGES_MISSING", "READ_ONLY_ROOT_MISSING"},
			check:       checkUnhardened,
		},
		{
			ID: "ROOT_USER", Name: "root-user", Severity: Warning,
			Purpose: "The server is told to run as root inside the sandbox (--user 0 or root; a policy's uid 0), or in root's group (a policy's gid 0).", Rationale: "As root, file modes no longer apply to it inside the namespace, and any escape starts from uid 0. In root's group it reads and writes the host's root-group files under a root launcher or a rootful engine. A container entry with no --user at all is an item of CONTAINER_UNHARDENED; this ID also waives that item.",
			Remediation: "Run as a non-root user (--user 1000:1000; a policy's default).", Bad: without("--user", 2, "--user", "root"), Good: run(),
			check: func(t *readback.Target, o Options, report reportFn) {
				for _, f := range t.Flags {
					if f.Kind == readback.FlagRootUser && f.Value != "" {
						report(f.Pos, "runs as root (--user %s)", f.Value)
					}
				}
				if t.Origin == readback.FromPolicy && t.Plan != nil && t.Plan.User.Root() {
					report(t.Plan.UserPos, "runs as uid 0")
				}
				if t.Origin == readback.FromPolicy && t.Plan != nil && t.Plan.User.RootGroup() {
					report(t.Plan.UserPos, "runs in root's group (gid 0)")
				}
			},
		},
		{
			ID: "HOST_NAMESPACE", Name: "host-namespace", Severity: Error,
			Purpose: "The container shares a host namespace (--pid, --ipc, --uts or --userns host).", Rationale: "A shared PID namespace exposes every host process (and /proc/PID/environ of the user's); a shared IPC namespace its shared memory.",
			Remediation: "Remove the host namespace flag.", Bad: run("--pid", "host"), Good: run(),
			check: flagRule(readback.FlagHostNamespace, "shares the host's %s namespace"),
		},
		{
			ID: "SECCOMP_UNCONFINED", Name: "seccomp-unconfined", Severity: Error,
			Purpose: "The container runs without a seccomp filter.", Rationale: "seccomp=unconfined opens every system call, including those kernel exploits need.",
			Remediation: "Remove --security-opt seccomp=unconfined.", Bad: run("--security-opt", "seccomp=unconfined"), Good: run(),
			check: flagRule(readback.FlagSeccompUnconfined, "seccomp=unconfined"),
		},
		{
			ID: "APPARMOR_UNCONFINED", Name: "apparmor-unconfined", Severity: Error,
			Purpose: "The container runs without its AppArmor profile.", Rationale: "apparmor=unconfined removes the engine's default mandatory access control.",
			Remediation: "Remove --security-opt apparmor=unconfined.", Bad: run("--security-opt", "apparmor=unconfined"), Good: run(),
			check: flagRule(readback.FlagAppArmorUnconf, "apparmor=unconfined"),
		},
	}
}

// sandboxRules flag the host sandboxes' launch commands: bwrap's missing
// isolation, a seatbelt profile or wrapper that does not hold.
func sandboxRules() []*Rule {
	return []*Rule{
		{
			ID: "BWRAP_NO_NEW_SESSION", Name: "bwrap-no-new-session", Severity: Warning,
			Purpose: "A bwrap sandbox lacks --new-session.", Rationale: "Without a new session a sandboxed process can push keystrokes into the controlling terminal (TIOCSTI).",
			Remediation: "Add --new-session.",
			Bad:         bwrapEntry("--unshare-all", "--die-with-parent", "--ro-bind", "/usr", "/usr", "--", "/usr/bin/server"),
			Good:        bwrapEntry("--unshare-all", "--new-session", "--die-with-parent", "--ro-bind", "/usr", "/usr", "--", "/usr/bin/server"),
			check:       flagRule(readback.FlagBwrapNoNewSession, "bwrap without --new-session"),
		},
		{
			ID: "BWRAP_NO_DIE_WITH_PARENT", Name: "bwrap-no-die-with-parent", Severity: Warning,
			Purpose: "A bwrap sandbox lacks --die-with-parent.", Rationale: "When the client exits the server keeps running, unsupervised.",
			Remediation: "Add --die-with-parent.",
			Bad:         bwrapEntry("--unshare-all", "--new-session", "--ro-bind", "/usr", "/usr", "--", "/usr/bin/server"),
			Good:        bwrapEntry("--unshare-all", "--new-session", "--die-with-parent", "--ro-bind", "/usr", "/usr", "--", "/usr/bin/server"),
			check:       flagRule(readback.FlagBwrapNoDie, "bwrap without --die-with-parent"),
		},
		{
			ID: "BWRAP_SHARE_NET", Name: "bwrap-share-net", Severity: Error,
			Purpose: "A bwrap sandbox shares the host's network.", Rationale: "--share-net (or no --unshare-net) gives the server the host's network, loopback services included.",
			Remediation: "Use --unshare-all without --share-net.",
			Bad:         bwrapEntry("--unshare-all", "--share-net", "--new-session", "--die-with-parent", "--ro-bind", "/usr", "/usr", "--", "/usr/bin/server"),
			Good:        bwrapEntry("--unshare-all", "--new-session", "--die-with-parent", "--ro-bind", "/usr", "/usr", "--", "/usr/bin/server"),
			check:       flagRule(readback.FlagBwrapShareNet, "bwrap shares the host network"),
		},
		{
			ID: "BWRAP_BIND_ROOT", Name: "bwrap-bind-root", Severity: Error,
			Purpose: "A bwrap sandbox binds the host's / into itself.", Rationale: "--bind / / (or --ro-bind / /) rebuilds the host's whole tree inside the namespace.",
			Remediation: "Bind the runtime folders and the project only.",
			Bad:         bwrapEntry("--unshare-all", "--new-session", "--die-with-parent", "--bind", "/", "/", "--", "/usr/bin/server"),
			Good:        bwrapEntry("--unshare-all", "--new-session", "--die-with-parent", "--ro-bind", "/usr", "/usr", "--", "/usr/bin/server"),
			check:       flagRule(readback.FlagBwrapBindRoot, "bwrap binds the host's /"),
		},
		{
			ID: "SEATBELT_PROFILE", Name: "seatbelt-profile", Severity: Error,
			Purpose: "A sandbox-exec profile fails the structural checks ((allow default), unfiltered file-write* or network*, an undefined param...).", Rationale: "In SBPL the last matching rule wins and an undefined parameter is #f: a profile can look strict and allow everything.",
			Remediation: "Fix the profile as the finding says, or generate it from a policy (backend seatbelt).",
			Bad:         Example{Kind: "client", Text: `{"mcpServers": {"s": {"command": "sandbox-exec", "args": ["-p", "(version 1)(allow default)", "/usr/bin/server"]}}}`},
			Good:        Example{Kind: "client", Text: `{"mcpServers": {"s": {"command": "sandbox-exec", "args": ["-p", "(version 1)(deny default)(allow file-read* (subpath \"/usr/lib\"))", "/usr/bin/server"]}}}`},
			check:       flagRule(readback.FlagSeatbeltFinding, "profile: %s"),
		},
		{
			ID: "SEATBELT_WRAPPER_ENV", Name: "seatbelt-wrapper-env", Severity: Error,
			Purpose:     "A client entry runs a seatbelt wrapper (.mcpolicy/seatbelt/SERVER.sh, by sh, bash, zsh or its shebang) that does not start sandbox-exec through env -i with the granted variables only. The wrapper is read where the config is this machine's; one not built yet is not judged.",
			Rationale:   "Wrappers built before cleared the environment in the shell by reading export -p: under bash, which macOS's /bin/sh is, they cleared nothing, and under zsh or sh a variable whose name is no shell identifier (npm's npm_config_//registry.npmjs.org/:_authToken, AWS-SESSION) was kept. The server then received the client's secrets (AWS_SECRET_ACCESS_KEY) though the policy grants none.",
			Remediation: "Run `mcpolicy build` again: the wrapper it writes keeps the granted variables the caller sets (`set -- ${NAME+\"NAME=$NAME\"}`, at its top) and ends in `exec /usr/bin/env -i ${1+\"$@\"} PATH=… HOME=… /usr/bin/sandbox-exec …`; one built before ends in `exec /usr/bin/sandbox-exec …`. The two examples below differ in that wrapper only. Do not edit the wrapper by hand.",
			Bad: Example{Kind: "client", Text: `{"mcpServers": {"s": {"command": "/bin/sh", "args": [".mcpolicy/seatbelt/s.sh"]}}}`,
				Files: map[string]string{".mcpolicy/seatbelt/s.sh": "#!/bin/sh\nset -eu\nfor name in $(export -p | sed -n 's/^export \\([A-Za-z_][A-Za-z0-9_]*\\)=.*/\\1/p'); do\n  case \"$name\" in PATH|HOME) ;; *) unset \"$name\" ;; esac\ndone\nexec /usr/bin/sandbox-exec -f s.sb -- /usr/local/bin/server\n"}},
			Good: Example{Kind: "client", Text: `{"mcpServers": {"s": {"command": "/bin/sh", "args": [".mcpolicy/seatbelt/s.sh"]}}}`,
				Files: map[string]string{".mcpolicy/seatbelt/s.sh": "#!/bin/sh\nset -eu\nset -- ${TOKEN+\"TOKEN=$TOKEN\"}\nexec /usr/bin/env -i ${1+\"$@\"} PATH=/usr/bin:/bin HOME=/var/empty /usr/bin/sandbox-exec -f s.sb -- /usr/local/bin/server\n"}},
			check: flagRule(readback.FlagSeatbeltWrapper, "%s; `mcpolicy build` writes a wrapper that starts the server through env -i"),
		},
	}
}

// entryRules flag how a client entry starts its server: secrets written
// inline, variables that arrive empty, no confinement (or a client's own).
func entryRules() []*Rule {
	return []*Rule{
		{
			ID: "SECRET_INLINE", Name: "secret-inline", Severity: Error,
			Purpose: "A secret value is written into the config: a token, a key or a password in an env or headers value, in -e KEY=value, in an argument (--api-key X, a token after the image, postgres://user:pass@host) or in a remote url. Token formats are read first, then placeholders (<YOUR_TOKEN>, ghp_your_token_here); settings (AWS_REGION=us-east-1, LOG_LEVEL=debug, booleans, numbers, URLs without credentials, paths) are not secrets.", Rationale: "A committed config leaks it to everyone with the repository; an argv leaks it to every process on the machine (ps).",
			Remediation: "Pass the variable by name (-e KEY, env names in a policy) and keep the value in the client's environment (where the client passes it on) or in mcpolicy's env file (`mcpolicy client` writes entries that read it).",
			Bad:         run("-e", "GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789"), Good: run("-e", "GITHUB_TOKEN"),
			check: flagRule(readback.FlagSecretInline, "secret value of %s is inline"),
		},
		{
			ID: "ENV_UNSET", Name: "env-unset", Severity: Warning,
			Purpose:     "A variable is passed into the sandbox by name, but the client gives the launch no value for it.",
			Rationale:   "Claude Desktop, Windsurf, Cline and Codex start servers with a handful of variables (HOME, PATH...) and Claude Desktop, Cline, Zed and Codex's env table expand no ${VAR}: `-e GITHUB_TOKEN` then passes an empty or literal value, and the server fails at its first call, far from the cause. Gemini CLI drops secret-looking names it is not told about.",
			Remediation: "Give the value where the client reads it: the entry's env with the client's own reference (${VAR}, ${env:VAR}), Codex's env_vars, or an entry from `mcpolicy client`, whose launcher reads it from ~/.config/mcpolicy/env.",
			Bad:         run("-e", "GITHUB_TOKEN"),
			Good:        Example{Kind: "client", Text: `{"mcpServers": {"s": {"command": "/usr/local/bin/mcpolicy-launch", "args": ["--env-file", "/home/me/.config/mcpolicy/env", "--engine", "/usr/bin/docker", "--project-root", "/home/me/p", "--sha256", "sha256:…", "/home/me/p/.mcpolicy/docker/s.json", "--", "run", "-i", "--rm", "--network", "none", "--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--user", "1000:1000", "-e", "GITHUB_TOKEN", "img:1"]}}}`},
			check: func(t *readback.Target, o Options, report reportFn) {
				if t.Origin != readback.FromClient || t.Plan == nil {
					return
				}
				for _, e := range t.Plan.Env {
					if t.Passes(e.Name) {
						continue
					}
					pos := t.Pos
					if e.Pos.Line > 0 {
						pos = e.Pos
					}
					report(pos, "%s is passed by name, but this client gives the server no value for it (it passes on only a few variables of its own, and expands no ${VAR})", e.Name)
				}
			},
		},
		{
			ID: "UNCONFINED_SERVER", Name: "unconfined-server", Severity: Warning,
			Purpose:     "A local server runs directly on the host (npx, uvx, node, python..., also behind sh -c, bash -lc, cmd /c, wsl), unconfined.",
			Rationale:   "Such a process can open everything the user can: its dependency closure, not its source, decides what it reads. When its arguments or env also hand it a home folder, a credential store or a root, that is UNCONFINED_WIDE_GRANT, an error; a client sandbox is CLIENT_SANDBOX instead.",
			Remediation: "Write a policy for it and spawn it through docker, bwrap, mcpolicy exec or sandbox-exec.",
			Bad:         Example{Kind: "client", Text: `{"mcpServers": {"s": {"command": "cmd", "args": ["/c", "npx", "-y", "@modelcontextprotocol/server-filesystem", "C:\\work\\shop"]}}}`},
			Good:        run(),
			check:       flagRule(readback.FlagUnconfined, "runs %s directly on the host: nothing confines it"),
		},
		{
			ID: "UNCONFINED_WIDE_GRANT", Name: "unconfined-wide-grant", Severity: Error,
			Purpose:     "A server nothing confines is handed a home folder, one of the user's folders (Desktop, Documents, Downloads, a OneDrive, ~/projects, ~/code...), a drive or a folder at a drive's top (D:\\Data), a mounted volume, a credential store (~/.ssh, ~/.aws, ~/.claude...) or the filesystem root in its arguments or env (under a client sandbox too, which confines writes, not reads, unless its denyRead covers it), or a client sandbox lets it write one.",
			Rationale:   "The folders an entry hands a server (a filesystem server's allowed directories, --root, --allowed-dir=/, ALLOWED_PATHS) are what its tools serve to the model: a prompt injection then reads and rewrites every file there. Nothing but the server's own code stands between them and the whole home folder, so this is an error where an unconfined server given one project folder is a warning: a user's folder (Desktop, Documents, Downloads, ~/projects) holds many unrelated things, not the one project the job needs. Paths are read as written (/Users/NAME, /home/NAME, C:\\Users\\NAME, ~, $HOME, %USERPROFILE%, C:\\, /mnt/c), whatever machine lint runs on.",
			Remediation: "Hand the server the one project folder it works on, never a home or a root; better, confine it (a policy, then `mcpolicy client`), and pass a credential it needs by name, not its store.",
			Bad:         Example{Kind: "client", Text: `{"mcpServers": {"s": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me"]}}}`},
			Good:        Example{Kind: "client", Text: `{"mcpServers": {"s": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/work/shop"]}}}`},
			check:       flagRules("%s", readback.FlagHostGrant, readback.FlagUserFolder),
		},
		{
			ID: "CLIENT_SANDBOX", Name: "client-sandbox", Severity: Warning,
			Purpose:     "A server runs under a client's sandbox (VS Code's \"sandboxEnabled\": true, an srt sandbox-runtime wrapper): the finding says what it enforces and what it leaves open.",
			Rationale:   "These sandboxes (sandbox-runtime: Seatbelt on macOS, bubblewrap on Linux) limit writes to allowWrite (VS Code adds the server's cwd and ~/.npm) and the network to allowedDomains (VS Code adds registry.npmjs.org), but allow every read not in denyRead, so ~/.ssh and ~/.aws stay readable, and pass the whole environment. VS Code does not sandbox at all on Windows, and auto-approves a sandboxed server's tool calls.",
			Remediation: "Add the credential stores (and the home folder, where the server does not need it) to sandbox.filesystem.denyRead, keep allowWrite to the project and allowedDomains to the APIs it calls; or confine it with a policy.",
			Bad:         Example{Kind: "client", Text: `{"servers": {"s": {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "${workspaceFolder}"], "sandboxEnabled": true, "sandbox": {"filesystem": {"allowWrite": ["${workspaceFolder}"]}, "network": {"allowedDomains": ["api.github.com"]}}}}}`},
			Good:        run(),
			check:       flagRule(readback.FlagClientSandbox, "%s"),
		},
	}
}

// argvRules flag a hand-written launch command's arguments: a read-write
// bind, a variable never passed in, stdio attached wrong, an option and
// its value run together or read as the image.
func argvRules() []*Rule {
	return []*Rule{
		{
			ID: "BIND_RW", Name: "rw-bind", Severity: Warning,
			Purpose:     "A hand-written container entry binds a host folder read-write (docker -v ~/proj:/w without :ro, --mount without readonly). A bwrap --bind is not flagged: bwrap has no default, its author chose --bind over --ro-bind, and the bind is counted as a grant.",
			Rationale:   "A read-write bind is a write grant on every file below it: the server can change the code it works on, plant a hook or a config that runs later outside the sandbox, or delete it. -v defaults to read-write, so it is often a missing :ro; the finding says how wide the folder is (the whole project, a folder of the home folder...). Home, parent-of-project, root and credential-store binds are their own errors.",
			Remediation: "Add :ro (--mount ...,readonly; bwrap --ro-bind) unless the server must write there; then bind the narrowest folder it writes, and keep .git and the configs protected (an entry from `mcpolicy client` does).",
			Bad:         run("-v", "/srv/data:/data"),
			Good:        run("-v", "/srv/data:/data:ro"),
			check:       checkBindRW,
		},
		{
			ID: "ENV_NOT_PASSED", Name: "env-not-passed", Severity: Warning,
			Purpose:     "A variable is set in the entry's \"env\" but never passed into the container (no -e NAME, no --env-file naming it).",
			Rationale:   "The client gives \"env\" to the docker or podman CLI, not to the server: the container sees only what -e or --env-file pass. The server then starts without its token and fails at its first call, and the value sits in the config for nothing.",
			Remediation: "Add -e NAME (the name alone: the engine takes the value from the env the client gave it), or remove the variable.",
			Bad:         dockerEntry(`"env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}`, append(append([]string{}, confined...), "img:1")...),
			Good:        dockerEntry(`"env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}`, append(append([]string{}, confined...), "-e", "GITHUB_TOKEN", "img:1")...),
			check:       flagRule(readback.FlagEnvNotPassed, "%s is set in the entry's env but never passed into the container (no -e %[1]s): the server does not get it"),
		},
		{
			ID: "STDIO_ATTACH", Name: "stdio-attach", Severity: Warning,
			Purpose:     "A stdio container is started with -t/--tty (or -it), with -d, or without -i.",
			Rationale:   "A stdio server speaks JSON-RPC on its stdin and stdout. Without -i the engine closes its stdin and it exits at once; -t puts a terminal between them (docker refuses -it when the client's stdin is not a terminal, and a tty rewrites line endings and echoes input); -d detaches it from the client altogether.",
			Remediation: "Use -i (with --rm), never -t or -d, for a server a client starts.",
			Bad:         run("-t"),
			Good:        run(),
			check:       flagRule(readback.FlagStdio, "%s"),
		},
		{
			ID: "JOINED_ARG", Name: "joined-arg", Severity: Warning,
			Purpose:     "An option and its value are written as one argument (\"-e X=Y\", \"-v a:b\", \"--network none\").",
			Rationale:   "Clients pass each args element as one argument, without a shell: \"-e X=Y\" reaches the engine as -e with the value \" X=Y\" (a variable named \" X\" the server never sees), \"-v a:b\" as a volume named \" a\", and \"--network none\" as an unknown flag that stops the start. What the entry seems to say is not what runs.",
			Remediation: "Split it: \"-e\", \"X=Y\" (better, \"-e\", \"X\" with the value in env).",
			Bad:         run("-e LOG_LEVEL=debug"),
			Good:        run("-e", "LOG_LEVEL=debug"),
			check:       flagRule(readback.FlagJoinedArg, "\"%s\" is one argument: the engine reads the option's value with the blank, or the whole as an unknown option (split it into two elements)"),
		},
		{
			ID: "ENV_VALUE_AS_IMAGE", Name: "env-value-as-image", Severity: Error,
			Purpose:     "-e NAME value: the value after -e NAME is taken as the image, and the real image as the server's command.",
			Rationale:   "-e takes one argument, NAME or NAME=VALUE. The next argument is the first that is not an option: the engine runs it as the image, pulling it from a registry when it has no such image. A region or a token becomes an image name sent to Docker Hub, a name anyone can register.",
			Remediation: "Write -e NAME=value, or better -e NAME with the value in the entry's env.",
			Bad:         run("-e", "AWS_REGION", "us-east-1"),
			Good:        run("-e", "AWS_REGION"),
			check:       flagRule(readback.FlagEnvAsImage, "-e %s: -e takes one argument, so the engine runs the value as the image (and the image as its command)"),
		},
	}
}

// imageRules flag images a container entry does not pin.
func imageRules() []*Rule {
	return []*Rule{
		{
			ID: "PULL_ALWAYS", Name: "pull-always", Severity: Warning,
			Purpose:     "A container entry pulls on every start (--pull always, podman --pull newer) an image not pinned by digest.",
			Rationale:   "Each start runs whatever the tag points to at that moment: whoever can push the tag changes the server's code with no review and no change in the config. A digest-pinned image is the same bytes every time.",
			Remediation: "Pin the image by digest (image@sha256:...) and drop --pull always, or pull deliberately and review what changed.",
			Bad:         run("--pull", "always"),
			Good:        dockerRun(append(append([]string{}, confined...), "--pull", "always", "img:1@sha256:"+strings.Repeat("0", 64))...),
			check: func(t *readback.Target, o Options, report reportFn) {
				if t.Plan == nil || t.PullPos.Line == 0 || hasFlag(t, readback.FlagEnvAsImage) {
					return
				}
				if p := strings.ToLower(t.Pull); (p == "always" || p == "newer") && !strings.Contains(t.Plan.Image, "@") {
					report(t.PullPos, "--pull %s re-fetches %s on every start: the code that runs changes when the tag moves", t.Pull, t.Plan.Image)
				}
			},
		},
		{
			ID: "IMAGE_UNPINNED", Name: "image-unpinned", Severity: Warning,
			Purpose:     "A container entry's image has no tag or is :latest (and no digest).",
			Rationale:   "An unpinned image is whatever was pulled last, different on every machine and changed by the next pull: the server a reviewer read is not the one that runs.",
			Remediation: "Pin a version tag (mcp/github:1.2.0), best with its digest (mcp/github:1.2.0@sha256:...).",
			Bad:         dockerRun(append(append([]string{}, confined...), "mcp/github")...),
			Good:        run(),
			check: func(t *readback.Target, o Options, report reportFn) {
				if img, ok := entryImage(t); ok {
					switch _, tag, digest := imageRef(img); {
					case digest != "":
					case tag == "":
						report(t.ImagePos, "image %s has no tag: it runs whatever :latest was pulled last", img)
					case tag == "latest":
						report(t.ImagePos, "image %s is not pinned: :latest moves", img)
					}
				}
			},
		},
		{
			ID: "IMAGE_NOT_DIGEST", Name: "image-not-digest", Severity: Info,
			Purpose:     "A container entry pins its image by a version tag, not by digest.",
			Rationale:   "A tag is a name the registry can point elsewhere (a re-pushed tag, a compromised publisher); a digest names the bytes.",
			Remediation: "Add the digest: image:1.2.0@sha256:... (docker buildx imagetools inspect, or the registry, shows it).",
			Bad:         run(),
			Good:        dockerRun(append(append([]string{}, confined...), "img:1@sha256:"+strings.Repeat("0", 64))...),
			check: func(t *readback.Target, o Options, report reportFn) {
				if img, ok := entryImage(t); ok {
					if _, tag, digest := imageRef(img); digest == "" && tag != "" && tag != "latest" {
						report(t.ImagePos, "image %s is pinned by tag, not digest", img)
					}
				}
			},
		},
	}
}

// clientRules flag what a client lets the server do unasked, and what lint
// cannot read: approvals in advance, dangerous modes, remote servers,
// unknown flags.
func clientRules() []*Rule {
	return []*Rule{
		{
			ID: "AUTO_APPROVE", Name: "auto-approve", Severity: Warning,
			Purpose:     "The entry approves tool calls in advance: Cline's autoApprove, Roo's alwaysAllow, Gemini CLI's \"trust\": true.",
			Rationale:   "An auto-approved tool runs on whatever the model decides, a prompt injection in a web page or an issue included, with no one shown the call. Approval is the last check between the model and a write, a delete or a send.",
			Remediation: "Keep the lists empty, or to read-only tools (search, list, get); confirm anything that writes, deletes, sends or runs.",
			Bad:         dockerEntry(`"autoApprove": ["write_file", "delete_file"]`, append(append([]string{}, confined...), "img:1")...),
			Good:        dockerEntry(`"autoApprove": []`, append(append([]string{}, confined...), "img:1")...),
			check:       flagRule(readback.FlagAutoApprove, "%s"),
		},
		{
			ID: "DANGEROUS_MODE", Name: "dangerous-mode", Severity: Error,
			Purpose:     "An entry turns on a known dangerous mode: a --dangerously-* flag (Claude Code's --dangerously-skip-permissions, Codex's --dangerously-bypass-approvals-and-sandbox), --yolo or --approval-mode yolo (Gemini CLI, Codex), --permission-mode bypassPermissions, --sandbox danger-full-access, Copilot CLI's --allow-all(-tools/-paths), a browser's --no-sandbox on the host, or an env switch (*DANGEROUS*, *YOLO*, ALLOW_ALL, SKIP_PERMISSIONS, BYPASS_PERMISSIONS, DISABLE_SANDBOX, NO_SANDBOX) set to a true value.",
			Rationale:   "These switches exist to remove a program's own approvals or sandbox, and say so in their names. Behind an MCP server (an agent run as a tool, a browser) they let the model's requests run unchecked. The list is of switches that are documented to do that; a name matching an env pattern with a false value is not flagged, and --no-sandbox inside a container is not (Chrome needs it there, and the container confines it).",
			Remediation: "Remove the switch; if the server needs wider authority, grant it in a policy where it is reviewed, and waive nothing silently.",
			Bad:         Example{Kind: "client", Text: `{"mcpServers": {"s": {"command": "claude", "args": ["mcp", "serve", "--dangerously-skip-permissions"]}}}`},
			Good:        Example{Kind: "client", Text: `{"mcpServers": {"s": {"command": "claude", "args": ["mcp", "serve"]}}}`},
			check:       flagRule(readback.FlagDangerousMode, "%s"),
		},
		{
			ID: "REMOTE_SERVER", Name: "remote-server", Severity: Info,
			Purpose: "A server is remote (url, http, sse).", Rationale: "It runs on another machine: there is no filesystem of yours to confine; what matters is what your client sends it.",
			Remediation: "Nothing to confine here; review what data the client shares with it.",
			Bad:         Example{Kind: "client", Text: `{"mcpServers": {"s": {"url": "https://mcp.example.com/sse"}}}`},
			Good:        run(),
			check: func(t *readback.Target, o Options, report reportFn) {
				if t.Remote != "" {
					report(t.Pos, "runs on another machine (%s): no filesystem of yours to confine", t.Remote)
				}
			},
		},
		{
			ID: "HEADERS_HELPER", Name: "headers-helper", Severity: Warning,
			Purpose:     "A remote server's entry names a command the client runs on the host to make its request headers (Claude Code's headersHelper).",
			Rationale:   "The client runs the string in a shell, with the user's every right and nothing confining it, each time it connects: the config decides what runs on the machine, as a stdio entry's command does, and in a project's .mcp.json whoever writes the repository decides. Its output is the server's credentials, so what the command reads (a keychain, a token file) is read on every connection.",
			Remediation: "Point headersHelper at a script outside every project and every server's read-write grant, reviewed like a program you install; keep the token in the OS keychain, not in the command line.",
			Bad:         Example{Kind: "client", Text: `{"mcpServers": {"s": {"type": "http", "url": "https://mcp.example.com/mcp", "headersHelper": "curl -s https://tokens.example.com/mcp | sh"}}}`},
			Good:        Example{Kind: "client", Text: `{"mcpServers": {"s": {"type": "http", "url": "https://mcp.example.com/mcp"}}}`},
			check:       flagRule(readback.FlagHeadersHelper, "%s"),
		},
		{
			ID: "UNKNOWN_FLAG", Name: "unknown-flag", Severity: Warning,
			Purpose: "A launch command has a flag mcpolicy does not know.", Rationale: "An unknown flag may widen the sandbox; it is reported rather than ignored.",
			Remediation: "Check what the flag does; if it is harmless, waive the finding with the reason.",
			Bad:         run("--frobnicate"), Good: run(),
			check: flagRule(readback.FlagUnknown, "unknown flag %s: what it grants is not known"),
		},
	}
}

// symlinkRule flags symlinks in a mounted folder that lead out of every
// grant.
func symlinkRule() *Rule {
	return &Rule{
		ID: "SYMLINK_ESCAPE", Name: "symlink-escape", Severity: Warning,
		Purpose: "A mounted folder holds symlinks that do not resolve in the sandbox: their targets are outside every grant, or granted where the links do not lead.",
		Rationale: "They dangle inside the sandbox (a pnpm node_modules farm pointing at a store above the project): the pressure is then to widen the mount to a parent. " +
			"A relative link resolves against the sandbox's paths: at the link's own target (its mount's target and its path below it), its text leads to a sandbox path, where the store must be mounted; `..` stops at /. " +
			"So a link counts as resolving only when a mount shows, at that sandbox path, the folder the link means on the host; a mount of the store at another target does not quiet it. " +
			"Landlock and seatbelt grant folders at their host paths: there only the host target must be granted, and the target a line names is the host path itself; an absolute link's target is its host path on every backend.",
		Remediation: "Add the read-only mount the finding writes, as it is: the smallest folder holding the links' targets (a package's node_modules for one pnpm package, so its own dependencies resolve too), at the sandbox path they lead to. It adds a grant, which is the point: it is reviewed. Do not mount a parent instead (MOUNT_PARENT).",
		Bad: withFiles(policy(`image: "x:1"`+"\nmounts: [{source: \"app\", target: \"/w\"}]"),
			"app/node_modules/x", "-> ../../store/x", "store/x/index.js", "x"),
		Good: withFiles(policy(`image: "x:1"`+"\nmounts: [{source: \"app\", target: \"/w\"}, {source: \"store\", target: \"/store\", mode: \"ro\"}]"),
			"app/node_modules/x", "-> ../../store/x", "store/x/index.js", "x"),
		check: checkSymlinks,
	}
}

// withFiles adds project files to an example: name, content, name, ...
func withFiles(e Example, kv ...string) Example {
	e.Files = map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		e.Files[kv[i]] = kv[i+1]
	}
	return e
}

func hasFlag(t *readback.Target, k readback.FlagKind) bool {
	for _, f := range t.Flags {
		if f.Kind == k {
			return true
		}
	}
	return false
}

// checkRWUnprotected looks at each read-write mount by its written and its
// resolved path: the protected entries at its top that no read-only mount
// covers, and a protected name the mount itself is, or is inside.
func checkRWUnprotected(t *readback.Target, o Options, report reportFn) {
	if t.Plan == nil {
		return
	}
	protected := map[string]bool{}
	for _, p := range t.Plan.Protected {
		protected[p.Target] = true
	}
	var bases []string // what a path's components are counted from
	for i, b := range []string{t.ProjectRoot, t.Home} {
		if b == "" { // unknown: the placeholder hostOf gives its paths
			bases = append(bases, []string{"${PROJECT_ROOT}", "${HOME}"}[i])
			continue
		}
		bases = append(bases, filepath.Clean(b))
		if b, ok := onMachine(t, b); ok {
			if real, err := o.fs.evalSymlinks(b); err == nil {
				bases = append(bases, real)
			}
		}
	}
	for _, m := range mounts(t) {
		if m.Mode != compiler.ReadWrite {
			continue
		}
		paths := []string{m.Host}
		here, onHost := onMachine(t, m.Host)
		if onHost {
			if real, err := o.fs.evalSymlinks(here); err == nil && real != m.Host {
				paths = append(paths, real)
			}
		}
		for _, h := range paths {
			if at, _ := insideProtected(h, bases); at != "" {
				via := ""
				if h != m.Host {
					via = ", through a symlink"
				}
				if h == at {
					report(m.Pos, "read-write mount %s is the protected %s%s", m.Target, at, via)
				} else {
					report(m.Pos, "read-write mount %s is %s, inside the protected %s%s", m.Target, h, at, via)
				}
				break
			}
		}
		// The launcher binds every protected entry of a fixed top level
		// read-only at spawn, but for those the policy unprotects.
		fixed := t.FixedTop && (m.FixedTop() || t.ProjectRoot != "" && m.Host == filepath.Clean(t.ProjectRoot))
		var entries []os.DirEntry
		if onHost {
			entries, _ = os.ReadDir(here)
		}
		var open []string
		for _, e := range entries {
			if protect.Match(e.Name()) == "" || protected[path.Join(m.Target, e.Name())] {
				continue
			}
			if fixed && protect.Except(e.Name(), t.Plan.UnprotectedNames()) != "" {
				continue
			}
			open = append(open, e.Name())
		}
		if len(open) > 0 {
			sort.Strings(open)
			report(m.Pos, "read-write mount %s leaves writable: %s", m.Target, strings.Join(open, ", "))
		}
	}
}

// insideProtected returns the first component of p, below the deepest base
// holding it (else below /), that is a protected name, and its pattern.
func insideProtected(p string, bases []string) (string, string) {
	from := "/"
	for _, b := range bases {
		if within(p, b) && len(b) > len(from) {
			from = b
		}
	}
	rel, err := filepath.Rel(from, p)
	if err != nil || rel == "." {
		return "", ""
	}
	dir := from
	for _, comp := range strings.Split(rel, string(filepath.Separator)) {
		dir = filepath.Join(dir, comp)
		if pat := protect.Match(comp); pat != "" {
			return dir, pat
		}
	}
	return "", ""
}

// hardening are the items of CONTAINER_UNHARDENED: the flag that says one
// is missing, the former rule ID that waives it, what to add.
var hardening = []struct {
	kind readback.FlagKind
	id   string
	add  string
}{
	{readback.FlagNoCapDrop, "CAP_DROP_MISSING", "--cap-drop ALL"},
	{readback.FlagNoNewPrivsMissing, "NO_NEW_PRIVILEGES_MISSING", "--security-opt no-new-privileges"},
	{readback.FlagNoReadOnly, "READ_ONLY_ROOT_MISSING", "--read-only"},
	{readback.FlagRootUser, "ROOT_USER", "--user with a non-root uid"},
}

// checkUnhardened reports one finding per container entry listing the
// hardening flags it leaves out, at the first one's position (the run
// subcommand). An explicit --user root is ROOT_USER's, not an item here.
// A current waiver of an item's former ID takes the item out.
func checkUnhardened(t *readback.Target, o Options, report reportFn) {
	var missing []string
	var pos position.Pos
	for _, h := range hardening {
		if sel := o.items["CONTAINER_UNHARDENED"]; sel != nil && !sel[h.id] {
			continue
		}
		for _, f := range t.Flags {
			if f.Kind != h.kind || h.kind == readback.FlagRootUser && f.Value != "" {
				continue
			}
			if !waivedItem(t, h.id, o.Today) {
				missing = append(missing, h.add+" ("+h.id+")")
				if pos.Line == 0 {
					pos = f.Pos
				}
			}
			break
		}
	}
	if len(missing) > 0 {
		report(pos, "unhardened container, missing: %s", strings.Join(missing, ", "))
	}
}

// waivedItem reports whether the target's policy waives id, unexpired.
func waivedItem(t *readback.Target, id string, today time.Time) bool {
	if t.Plan == nil {
		return false
	}
	for _, w := range t.Plan.Waivers {
		if w.Rule != id {
			continue
		}
		if w.Expires != "" {
			exp, err := time.Parse("2006-01-02", w.Expires)
			if err != nil || !today.Before(exp.AddDate(0, 0, 1)) {
				continue
			}
		}
		return true
	}
	return false
}

// checkSharedTmp reports each grant of a folder that sharedFolder names,
// read as written (hostFacts), read-only or not: a read-only bind leaves
// every socket in it reachable (D-Bus to systemd --user, tmux, X11,
// ssh-agent, the engine: each runs commands as the user). A mount of
// the socket itself is DOCKER_SOCKET's: it is a file below such a folder,
// never the folder. verify/escape's unix-socket control is the evidence
// that a read-only bind does not stop connect(2): it binds the sockets'
// folders --ro-bind, and the connections succeed.
func checkSharedTmp(t *readback.Target, o Options, report reportFn) {
	for _, m := range mounts(t) {
		what, ok := sharedFolder(hostFacts(t, m.Source).Path)
		if !ok {
			continue
		}
		if m.Mode == compiler.ReadWrite {
			report(m.Pos, "mounts %s (%s) at %s, %s: the server reads them, connects to any socket, and can replace or plant files, sockets and links other programs use", m.Source, m.Mode, m.Target, what)
			continue
		}
		report(m.Pos, "mounts %s (%s) at %s, %s: read-only, the server still reads them and connects to any socket (a read-only bind does not stop connect(2))", m.Source, m.Mode, m.Target, what)
	}
}

// checkBindRW reports each read-write bind of a hand-written entry with how
// wide it is, read as written (hostFacts). Binds of /, a drive, a home
// folder or a parent of the project are left to their own errors, as are
// credential stores (MOUNT_CREDENTIALS says "writable"), what runs next to
// MOUNT_RUNS_NEXT, a socket to DOCKER_SOCKET, a folder every program shares
// (/tmp, /run/user/UID...) to MOUNT_SHARED_TMP; the project binds of an
// entry through mcpolicy-launch come from a reviewed policy. A bwrap
// entry's --bind is its author's choice (bwrap has no read-write default
// to forget :ro from): a grant, counted, not a finding.
func checkBindRW(t *readback.Target, o Options, report reportFn) {
	if t.Origin != readback.FromClient || t.FixedTop || t.Plan == nil || t.Launcher == backendtraits.Bwrap {
		return
	}
	root := ""
	if t.ProjectRoot != "" {
		root = filepath.Clean(t.ProjectRoot)
	}
	for _, m := range t.Plan.Mounts {
		if m.Mode != compiler.ReadWrite || !hostBase(m.Source.Base) {
			continue // not a host folder: a cluster's volume (a claim) read off a manifest
		}
		host := hostOf(t, m.Source)
		f := hostFacts(t, m.Source)
		if b := path.Base(filepath.ToSlash(host)); engineSocketBase(b) || escapeMount(t, m.Source) ||
			f.Root || f.HoldsHomes || f.IsHome() || len(f.Stores()) > 0 || len(f.RunsNext()) > 0 || root != "" && host != root && within(root, host) {
			continue
		}
		if _, shared := sharedFolder(f.Path); shared {
			continue
		}
		var breadth string
		switch {
		case m.Source.Base == compiler.ProjectRoot && path.Clean(m.Source.Rel) == ".", root != "" && host == root:
			breadth = "the whole project folder"
		case m.Source.Base == compiler.ProjectRoot:
			breadth = "a folder of the project (" + path.Clean(m.Source.Rel) + ")"
		case root != "" && within(host, root):
			rel, _ := filepath.Rel(root, host)
			breadth = "a folder of the project (" + filepath.ToSlash(rel) + ")"
		case f.Home != "" && !strings.Contains(f.Sub, "/"):
			breadth = "a top-level folder of the home folder (~/" + f.Sub + ")"
		case f.Home != "":
			breadth = "a folder in the home folder (~/" + f.Sub + ")"
		default:
			breadth = "a host folder"
		}
		report(m.Pos, "binds %s read-write at %s: %s, every file of it writable by the server (add :ro unless it must write)", m.Source, m.Target, breadth)
	}
}

// hostBase reports whether a path of that base is a host path.
func hostBase(b compiler.Base) bool {
	return b == compiler.Absolute || b == compiler.ProjectRoot || b == compiler.Home
}

// entryImage is a client container entry's image, when it names one that
// is not a variable and was not read off a misplaced -e value.
func entryImage(t *readback.Target) (string, bool) {
	if t.Origin != readback.FromClient || t.Plan == nil || t.ImagePos.Line == 0 || t.Plan.Image == "" || hasFlag(t, readback.FlagEnvAsImage) {
		return "", false
	}
	img := t.Plan.Image
	if strings.ContainsAny(img, "${}%") {
		return "", false
	}
	return img, true
}

// imageRef splits an image reference into name, tag and digest: the tag
// follows the last colon after the last slash (a registry's port is not
// one), the digest an @.
func imageRef(ref string) (name, tag, digest string) {
	name, digest, _ = strings.Cut(ref, "@")
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name, tag = name[:i], name[i+1:]
	}
	return name, tag, digest
}

// bwrapLauncher reports whether a client entry starts its server under
// bwrap, which runs as the invoking user (escapes.go).
func bwrapLauncher(t *readback.Target) bool { return t.Launcher == backendtraits.Bwrap }
