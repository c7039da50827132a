package lint

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/protect"
	"github.com/mcpolicy/mcpolicy/schema"
)

type reportFn = func(pos schema.Pos, format string, args ...any)

// policy and client build examples.
func policy(body string) Example {
	return Example{Kind: "policy", Text: "version: \"v1\"\nservers: s: {\n\t" + strings.ReplaceAll(strings.TrimSpace(body), "\n", "\n\t") + "\n}\n"}
}

func dockerRun(args ...string) Example {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = fmt.Sprintf("%q", a)
	}
	return Example{Kind: "client", Text: `{"mcpServers": {"s": {"command": "docker", "args": ["run", "-i", "--rm", ` + strings.Join(q, ", ") + `]}}}`}
}

// bwrapEntry is a client config starting a server under bwrap with args.
func bwrapEntry(args ...string) Example {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = fmt.Sprintf("%q", a)
	}
	return Example{Kind: "client", Text: `{"mcpServers": {"s": {"command": "bwrap", "args": [` + strings.Join(q, ", ") + `]}}}`}
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

func flagRule(kind FlagKind, msg string) func(t *Target, o Options, report reportFn) {
	return func(t *Target, o Options, report reportFn) {
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

// machine resolves a target's host paths.
func machine(t *Target) compiler.Machine {
	return compiler.Machine{ProjectRoot: t.ProjectRoot, Home: t.Home}
}

// mounts returns each mount with its resolved host path.
func mounts(t *Target) []struct {
	compiler.Mount
	Host string
} {
	var out []struct {
		compiler.Mount
		Host string
	}
	if t.Plan == nil {
		return nil
	}
	m := machine(t)
	for _, mt := range t.Plan.Mounts {
		out = append(out, struct {
			compiler.Mount
			Host string
		}{mt, filepath.Clean(m.Resolve(mt.Source))})
	}
	return out
}

func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// credentialStores are where a home folder keeps keys and tokens.
var credentialStores = []string{".ssh", ".aws", ".gnupg", ".config/gcloud", ".kube", ".docker/config.json",
	".netrc", ".npmrc", ".pypirc", ".git-credentials", "Library/Keychains", ".config/gh"}

var rules = []*Rule{
	{
		ID: "UNBUILDABLE", Name: "unbuildable", Severity: Error,
		Purpose:     "A backend the server lists cannot enforce its plan: mcpolicy build refuses it.",
		Rationale:   "A policy that does not build confines nothing: its client entries cannot be written, or start what they started before. Lint must not call it clean.",
		Remediation: "Change what the backend refuses (the message says what and why), or drop that backend from \"backends\".",
		Bad:         policy("command: [\"/bin/true\"]\nbackends: [\"landlock\"]\nmounts: [{source: \".\", target: \"/w\", mode: \"rw\"}]"),
		Good:        policy("command: [\"/bin/true\"]\nbackends: [\"landlock\"]\nmounts: [{source: \".\", target: \"/w\"}]"),
		check: func(t *Target, o Options, report reportFn) {
			for _, p := range t.Unbuildable {
				report(p.Pos, "%s", p.Msg)
			}
		},
	},
	{
		ID: "GRANT_COUNT", Name: "grant-count", Severity: Warning,
		Purpose:     "A server has more grants than a reviewer can hold at once (default 4; --max-grants).",
		Rationale:   "Confinement is read, not copied: start from nothing and add back only what the program cannot run without, keeping the additions few enough to review together.",
		Remediation: "Drop grants the server does not need, or split it into servers with fewer grants each; raise --max-grants only deliberately.",
		Bad:         policy(`image: "x:1"` + "\nenv: [\"A\", \"B\", \"C\"]\nmounts: [{source: \".\", target: \"/w\"}, {source: \"docs\", target: \"/d\"}]"),
		Good:        policy(`image: "x:1"` + "\nmounts: [{source: \".\", target: \"/w\"}]"),
		check: func(t *Target, o Options, report reportFn) {
			if t.Plan == nil {
				return
			}
			gs := t.Plan.Grants()
			if len(gs) > o.MaxGrants {
				report(t.Pos, "%s, more than %d", compiler.GrantSummary(gs), o.MaxGrants)
			}
		},
	},
	{
		ID: "MOUNT_ROOT", Name: "root-mount", Severity: Error,
		Purpose:     "The host's root folder is mounted.",
		Rationale:   "A mount of / hands the process every file the user can read: the confinement then confines nothing.",
		Remediation: "Mount the one folder the server works on.",
		Bad:         policy(`image: "x:1"` + "\nmounts: [{source: \"/\", target: \"/host\"}]"),
		Good:        policy(`image: "x:1"` + "\nmounts: [{source: \".\", target: \"/w\"}]"),
		check: func(t *Target, o Options, report reportFn) {
			for _, m := range mounts(t) {
				if m.Host == "/" {
					report(m.Pos, "mounts the host's / (%s) at %s", m.Mode, m.Target)
				}
			}
		},
	},
	{
		ID: "MOUNT_HOME", Name: "home-mount", Severity: Error,
		Purpose:     "The user's home folder is mounted.",
		Rationale:   "Home holds every credential store, every other project and the shell's history: a home mount is a parent mount of everything the user owns.",
		Remediation: "Mount the project folder, and any one folder below home the server needs, read-only.",
		Bad:         policy(`image: "x:1"` + "\nmounts: [{source: \"~\", target: \"/home/me\"}]"),
		Good:        policy(`image: "x:1"` + "\nmounts: [{source: \"~/.cache/x\", target: \"/cache\"}]"),
		check: func(t *Target, o Options, report reportFn) {
			for _, m := range mounts(t) {
				if t.Home != "" && m.Host == filepath.Clean(t.Home) {
					report(m.Pos, "mounts the home folder %s (%s) at %s", m.Source, m.Mode, m.Target)
				}
			}
		},
	},
	{
		ID: "MOUNT_PARENT", Name: "parent-mount", Severity: Error,
		Purpose:     "A folder above the project is mounted.",
		Rationale:   "A parent of the project holds its siblings: other repositories, their .env files, their credentials. The server asked for one project.",
		Remediation: "Mount the project folder itself; grant a dependency store above it read-only and on its own, if the toolchain needs it.",
		Bad:         policy(`image: "x:1"` + "\nmounts: [{source: \"${PROJECT_PARENT}\", target: \"/w\"}]"),
		Good:        policy(`image: "x:1"` + "\nmounts: [{source: \".\", target: \"/w\"}]"),
		check: func(t *Target, o Options, report reportFn) {
			if t.ProjectRoot == "" {
				return
			}
			root := filepath.Clean(t.ProjectRoot)
			for _, m := range mounts(t) {
				if m.Host != root && within(root, m.Host) {
					report(m.Pos, "mounts %s (%s), a parent of the project folder %s", m.Source, m.Mode, root)
				}
			}
		},
	},
	{
		ID: "MOUNT_CREDENTIALS", Name: "credential-mount", Severity: Error,
		Purpose:     "A grant covers a credential store (~/.ssh, ~/.aws, ~/.gnupg, ~/.config/gcloud, ~/.kube, ~/.docker/config.json, ~/.netrc, ~/.npmrc, ~/.pypirc, Keychains...).",
		Rationale:   "These files are what an attacker wants from a compromised dependency; inside the boundary, the kernel will hand them over.",
		Remediation: "Mount a narrower folder, or pass the one token the server needs by name (env).",
		Bad:         policy(`image: "x:1"` + "\nmounts: [{source: \"~/.aws\", target: \"/aws\"}]"),
		Good:        policy(`image: "x:1"` + "\nenv: [\"AWS_PROFILE\"]"),
		check: func(t *Target, o Options, report reportFn) {
			if t.Home == "" {
				return
			}
			for _, m := range mounts(t) {
				var hit []string
				for _, c := range credentialStores {
					store := filepath.Join(t.Home, c)
					if within(store, m.Host) || within(m.Host, store) {
						hit = append(hit, "~/"+c)
					}
				}
				if len(hit) > 0 {
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
		ID: "NETWORK_OPEN", Name: "network-open", Severity: Warning,
		Purpose:     "The server can reach the network.",
		Rationale:   "--network none is the first flag people remove; without it every secret inside the boundary is one request away from leaving.",
		Remediation: "Keep network \"none\"; when the server must reach an API, allow exactly that host and port.",
		Bad:         policy(`image: "x:1"` + "\nnetwork: allow: [\"api.github.com:443\"]"),
		Good:        policy(`image: "x:1"`),
		check: func(t *Target, o Options, report reportFn) {
			if open, dests := policyEgress(t); open && len(dests) > 0 {
				// any one entry opens it: point at the first written
				report(firstAllowPos(t.Plan.Network), "network open: egress to %s", egressPhrase(dests))
			} else if open {
				report(t.Plan.Network.Pos, "network is %s", t.Plan.Network.Mode)
			}
			for _, f := range t.Flags {
				if f.Kind == FlagNetwork && f.Value != "host" {
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
		check: func(t *Target, o Options, report reportFn) {
			for _, f := range t.Flags {
				if f.Kind == FlagNetwork && f.Value == "host" {
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
	{
		ID: "RW_UNPROTECTED", Name: "rw-unprotected", Severity: Warning,
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
		Remediation: "Keep network none, or move the secrets out of the mounted folder (or mount a narrower one).",
		Bad:         withFiles(policy(`image: "x:1"`+"\nmounts: [{source: \".\", target: \"/w\"}]\nnetwork: allow: [\"api.github.com:443\"]"), ".env", "TOKEN=x"),
		Good:        withFiles(policy(`image: "x:1"`+"\nmounts: [{source: \".\", target: \"/w\"}]"), ".env", "TOKEN=x"),
		check: func(t *Target, o Options, report reportFn) {
			open, dests := policyEgress(t)
			if !open && !hasFlag(t, FlagNetwork) {
				return
			}
			via := "the open network"
			if len(dests) > 0 {
				via = "egress to " + egressPhrase(dests)
			}
			// at the mount: it holds the secrets, and each mount is its own finding
			for _, m := range mounts(t) {
				if secrets := findSecrets(m.Host, 4, 20000); len(secrets) > 0 {
					report(m.Pos, "mount %s holds secrets that %s could carry away: %s", m.Target, via, strings.Join(secrets, ", "))
				}
			}
		},
	},
	{
		ID: "TMPFS_UNBOUNDED", Name: "unbounded-tmpfs", Severity: Error,
		Purpose:     "A tmpfs has no size bound.",
		Rationale:   "A scratch tmpfs is a repair for --read-only, not a way to fill the host's memory.",
		Remediation: "Give every --tmpfs a size= option (a policy's scratch always has one).",
		Bad:         run("--tmpfs", "/tmp"),
		Good:        run("--tmpfs", "/tmp:size=64m"),
		check:       flagRule(FlagUnboundedTmpfs, "tmpfs %s has no size bound"),
	},
	{
		ID: "DOCKER_SOCKET", Name: "docker-socket", Severity: Error,
		Purpose:     "The container engine's socket is mounted.",
		Rationale:   "Whoever talks to the engine's socket can start a privileged container with / mounted: it is root on the host.",
		Remediation: "Never mount the socket into an MCP server; give a container-managing server its own, restricted API.",
		Bad:         run("-v", "/var/run/docker.sock:/var/run/docker.sock"),
		Good:        run(),
		check: func(t *Target, o Options, report reportFn) {
			for _, f := range t.Flags {
				if f.Kind == FlagDockerSocket {
					report(f.Pos, "mounts the engine socket %s: root on the host", f.Value)
				}
			}
			for _, m := range mounts(t) {
				if base := filepath.Base(m.Host); (base == "docker.sock" || base == "podman.sock") && !hasFlag(t, FlagDockerSocket) {
					report(m.Pos, "mounts the engine socket %s: root on the host", m.Host)
				}
			}
		},
	},
	{
		ID: "PRIVILEGED", Name: "privileged", Severity: Error,
		Purpose: "The container runs --privileged.", Rationale: "--privileged gives every capability, every device and no seccomp or AppArmor profile: nothing is confined.",
		Remediation: "Remove --privileged.", Bad: run("--privileged"), Good: run(),
		check: flagRule(FlagPrivileged, "--privileged: every capability and device, no seccomp"),
	},
	{
		ID: "CAP_ADD", Name: "cap-add", Severity: Error,
		Purpose: "The container adds a capability back.", Rationale: "Capabilities are the routes by which a process regains authority; each one added reopens a route.",
		Remediation: "Remove --cap-add; if the server truly needs one, say why in a waiver.", Bad: run("--cap-add", "SYS_ADMIN"), Good: run(),
		check: flagRule(FlagCapAdd, "--cap-add %s"),
	},
	{
		ID: "CAP_DROP_MISSING", Name: "cap-drop-missing", Severity: Error,
		Purpose: "The container does not drop all capabilities (--cap-drop ALL).", Rationale: "Docker's default set still includes CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_SETUID and others a server does not need.",
		Remediation: "Add --cap-drop ALL.", Bad: without("--cap-drop", 2), Good: run(),
		check: flagRule(FlagNoCapDrop, "no --cap-drop ALL"),
	},
	{
		ID: "NO_NEW_PRIVILEGES_MISSING", Name: "no-new-privileges-missing", Severity: Error,
		Purpose: "The container may gain privileges (no --security-opt no-new-privileges).", Rationale: "Without it a setuid binary in the image can raise the process's privileges again.",
		Remediation: "Add --security-opt no-new-privileges.", Bad: without("--security-opt", 2), Good: run(),
		check: flagRule(FlagNoNewPrivsMissing, "no --security-opt no-new-privileges"),
	},
	{
		ID: "READ_ONLY_ROOT_MISSING", Name: "read-only-root-missing", Severity: Error,
		Purpose: "The container's own filesystem is writable (no --read-only).", Rationale: "A writable image lets the server change its own code and tools for the next run, and gives it unbounded disk.",
		Remediation: "Add --read-only, and a bounded --tmpfs where it must write.", Bad: without("--read-only", 1), Good: run(),
		check: flagRule(FlagNoReadOnly, "no --read-only"),
	},
	{
		ID: "ROOT_USER", Name: "root-user", Severity: Warning,
		Purpose: "The server runs as root inside the sandbox.", Rationale: "As root, file modes no longer apply to it inside the namespace, and any escape starts from uid 0.",
		Remediation: "Run as a non-root user (--user 1000:1000; a policy's default).", Bad: without("--user", 2), Good: run(),
		check: func(t *Target, o Options, report reportFn) {
			flagRule(FlagRootUser, "runs as root")(t, o, report)
			if t.Origin == FromPolicy && t.Plan != nil && t.Plan.User.Root() {
				report(t.Plan.UserPos, "runs as uid 0")
			}
		},
	},
	{
		ID: "HOST_NAMESPACE", Name: "host-namespace", Severity: Error,
		Purpose: "The container shares a host namespace (--pid, --ipc, --uts or --userns host).", Rationale: "A shared PID namespace exposes every host process (and /proc/PID/environ of the user's); a shared IPC namespace its shared memory.",
		Remediation: "Remove the host namespace flag.", Bad: run("--pid", "host"), Good: run(),
		check: flagRule(FlagHostNamespace, "shares the host's %s namespace"),
	},
	{
		ID: "SECCOMP_UNCONFINED", Name: "seccomp-unconfined", Severity: Error,
		Purpose: "The container runs without a seccomp filter.", Rationale: "seccomp=unconfined opens every system call, including those kernel exploits need.",
		Remediation: "Remove --security-opt seccomp=unconfined.", Bad: run("--security-opt", "seccomp=unconfined"), Good: run(),
		check: flagRule(FlagSeccompUnconfined, "seccomp=unconfined"),
	},
	{
		ID: "APPARMOR_UNCONFINED", Name: "apparmor-unconfined", Severity: Error,
		Purpose: "The container runs without its AppArmor profile.", Rationale: "apparmor=unconfined removes the engine's default mandatory access control.",
		Remediation: "Remove --security-opt apparmor=unconfined.", Bad: run("--security-opt", "apparmor=unconfined"), Good: run(),
		check: flagRule(FlagAppArmorUnconf, "apparmor=unconfined"),
	},
	{
		ID: "BWRAP_NO_NEW_SESSION", Name: "bwrap-no-new-session", Severity: Warning,
		Purpose: "A bwrap sandbox lacks --new-session.", Rationale: "Without a new session a sandboxed process can push keystrokes into the controlling terminal (TIOCSTI).",
		Remediation: "Add --new-session.",
		Bad:         bwrapEntry("--unshare-all", "--die-with-parent", "--ro-bind", "/usr", "/usr", "--", "/usr/bin/server"),
		Good:        bwrapEntry("--unshare-all", "--new-session", "--die-with-parent", "--ro-bind", "/usr", "/usr", "--", "/usr/bin/server"),
		check:       flagRule(FlagBwrapNoNewSession, "bwrap without --new-session"),
	},
	{
		ID: "BWRAP_NO_DIE_WITH_PARENT", Name: "bwrap-no-die-with-parent", Severity: Warning,
		Purpose: "A bwrap sandbox lacks --die-with-parent.", Rationale: "When the client exits the server keeps running, unsupervised.",
		Remediation: "Add --die-with-parent.",
		Bad:         bwrapEntry("--unshare-all", "--new-session", "--ro-bind", "/usr", "/usr", "--", "/usr/bin/server"),
		Good:        bwrapEntry("--unshare-all", "--new-session", "--die-with-parent", "--ro-bind", "/usr", "/usr", "--", "/usr/bin/server"),
		check:       flagRule(FlagBwrapNoDie, "bwrap without --die-with-parent"),
	},
	{
		ID: "BWRAP_SHARE_NET", Name: "bwrap-share-net", Severity: Error,
		Purpose: "A bwrap sandbox shares the host's network.", Rationale: "--share-net (or no --unshare-net) gives the server the host's network, loopback services included.",
		Remediation: "Use --unshare-all without --share-net.",
		Bad:         bwrapEntry("--unshare-all", "--share-net", "--new-session", "--die-with-parent", "--ro-bind", "/usr", "/usr", "--", "/usr/bin/server"),
		Good:        bwrapEntry("--unshare-all", "--new-session", "--die-with-parent", "--ro-bind", "/usr", "/usr", "--", "/usr/bin/server"),
		check:       flagRule(FlagBwrapShareNet, "bwrap shares the host network"),
	},
	{
		ID: "BWRAP_BIND_ROOT", Name: "bwrap-bind-root", Severity: Error,
		Purpose: "A bwrap sandbox binds the host's / into itself.", Rationale: "--bind / / (or --ro-bind / /) rebuilds the host's whole tree inside the namespace.",
		Remediation: "Bind the runtime folders and the project only.",
		Bad:         bwrapEntry("--unshare-all", "--new-session", "--die-with-parent", "--bind", "/", "/", "--", "/usr/bin/server"),
		Good:        bwrapEntry("--unshare-all", "--new-session", "--die-with-parent", "--ro-bind", "/usr", "/usr", "--", "/usr/bin/server"),
		check:       flagRule(FlagBwrapBindRoot, "bwrap binds the host's /"),
	},
	{
		ID: "SEATBELT_PROFILE", Name: "seatbelt-profile", Severity: Error,
		Purpose: "A sandbox-exec profile fails the structural checks ((allow default), unfiltered file-write* or network*, an undefined param...).", Rationale: "In SBPL the last matching rule wins and an undefined parameter is #f: a profile can look strict and allow everything.",
		Remediation: "Fix the profile as the finding says, or generate it from a policy (backend seatbelt).",
		Bad:         Example{Kind: "client", Text: `{"mcpServers": {"s": {"command": "sandbox-exec", "args": ["-p", "(version 1)(allow default)", "/usr/bin/server"]}}}`},
		Good:        Example{Kind: "client", Text: `{"mcpServers": {"s": {"command": "sandbox-exec", "args": ["-p", "(version 1)(deny default)(allow file-read* (subpath \"/usr/lib\"))", "/usr/bin/server"]}}}`},
		check:       flagRule(FlagSeatbeltFinding, "profile: %s"),
	},
	{
		ID: "SECRET_INLINE", Name: "secret-inline", Severity: Error,
		Purpose: "A secret value is written into the config (-e KEY=value, or an env value that looks like a token).", Rationale: "A committed config leaks it to everyone with the repository; an argv leaks it to every process on the machine (ps).",
		Remediation: "Pass the variable by name (-e KEY, env names in a policy) and keep the value in the client's environment (where the client passes it on) or in mcpolicy's env file (`mcpolicy client` writes entries that read it).",
		Bad:         run("-e", "GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789"), Good: run("-e", "GITHUB_TOKEN"),
		check: flagRule(FlagSecretInline, "secret value of %s is inline"),
	},
	{
		ID: "ENV_UNSET", Name: "env-unset", Severity: Warning,
		Purpose:     "A variable is passed into the sandbox by name, but the client gives the launch no value for it.",
		Rationale:   "Claude Desktop, Windsurf, Cline and Codex start servers with a handful of variables (HOME, PATH...) and Claude Desktop, Cline, Zed and Codex's env table expand no ${VAR}: `-e GITHUB_TOKEN` then passes an empty or literal value, and the server fails at its first call, far from the cause. Gemini CLI drops secret-looking names it is not told about.",
		Remediation: "Give the value where the client reads it: the entry's env with the client's own reference (${VAR}, ${env:VAR}), Codex's env_vars, or an entry from `mcpolicy client`, whose launcher reads it from ~/.config/mcpolicy/env.",
		Bad:         run("-e", "GITHUB_TOKEN"),
		Good:        Example{Kind: "client", Text: `{"mcpServers": {"s": {"command": "/usr/local/bin/mcpolicy-launch", "args": ["--env-file", "/home/me/.config/mcpolicy/env", "--engine", "/usr/bin/docker", "--project-root", "/home/me/p", "--", "run", "-i", "--rm", "--network", "none", "--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--user", "1000:1000", "-e", "GITHUB_TOKEN", "img:1"]}}}`},
		check: func(t *Target, o Options, report reportFn) {
			if t.Origin != FromClient || t.Plan == nil {
				return
			}
			for i, name := range t.Plan.Env {
				if t.Passes(name) {
					continue
				}
				pos := t.Pos
				if i < len(t.Plan.EnvPos) && t.Plan.EnvPos[i].Line > 0 {
					pos = t.Plan.EnvPos[i]
				}
				report(pos, "%s is passed by name, but this client gives the server no value for it (it passes on only a few variables of its own, and expands no ${VAR})", name)
			}
		},
	},
	{
		ID: "UNCONFINED_SERVER", Name: "unconfined-server", Severity: Warning,
		Purpose: "A local server runs directly on the host (npx, uvx, node, python...), unconfined.", Rationale: "Such a process can open everything the user can: its dependency closure, not its source, decides what it reads.",
		Remediation: "Write a policy for it and spawn it through docker, bwrap, mcpolicy exec or sandbox-exec.",
		Bad:         Example{Kind: "client", Text: `{"mcpServers": {"s": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/"]}}}`},
		Good:        run(),
		check:       flagRule(FlagUnconfined, "runs %s directly on the host: nothing confines it"),
	},
	{
		ID: "REMOTE_SERVER", Name: "remote-server", Severity: Info,
		Purpose: "A server is remote (url, http, sse).", Rationale: "It runs on another machine: there is no filesystem of yours to confine; what matters is what your client sends it.",
		Remediation: "Nothing to confine here; review what data the client shares with it.",
		Bad:         Example{Kind: "client", Text: `{"mcpServers": {"s": {"url": "https://mcp.example.com/sse"}}}`},
		Good:        run(),
		check: func(t *Target, o Options, report reportFn) {
			if t.Remote != "" {
				report(t.Pos, "runs on another machine (%s): no filesystem of yours to confine", t.Remote)
			}
		},
	},
	{
		ID: "UNKNOWN_FLAG", Name: "unknown-flag", Severity: Warning,
		Purpose: "A launch command has a flag mcpolicy does not know.", Rationale: "An unknown flag may widen the sandbox; it is reported rather than ignored.",
		Remediation: "Check what the flag does; if it is harmless, waive the finding with the reason.",
		Bad:         run("--frobnicate"), Good: run(),
		check: flagRule(FlagUnknown, "unknown flag %s: what it grants is not known"),
	},
	{
		ID: "SYMLINK_ESCAPE", Name: "symlink-escape", Severity: Warning,
		Purpose: "A mounted folder holds symlinks that resolve outside every grant.", Rationale: "They dangle inside the sandbox (a pnpm node_modules farm pointing at a store above the project): the pressure is then to widen the mount to a parent.",
		Remediation: "Add the smallest read-only grant that holds their targets (the finding names it); it adds a grant, which is the point: it is reviewed.",
		Bad: withFiles(policy(`image: "x:1"`+"\nmounts: [{source: \"app\", target: \"/w\"}]"),
			"app/node_modules/x", "-> ../../store/x", "store/x/index.js", "x"),
		Good: withFiles(policy(`image: "x:1"`+"\nmounts: [{source: \"app\", target: \"/w\"}, {source: \"store\", target: \"/store\"}]"),
			"app/node_modules/x", "-> ../../store/x", "store/x/index.js", "x"),
		check: checkSymlinks,
	},
}

// withFiles adds project files to an example: name, content, name, ...
func withFiles(e Example, kv ...string) Example {
	e.Files = map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		e.Files[kv[i]] = kv[i+1]
	}
	return e
}

func hasFlag(t *Target, k FlagKind) bool {
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
func checkRWUnprotected(t *Target, o Options, report reportFn) {
	if t.Plan == nil {
		return
	}
	protected := map[string]bool{}
	for _, p := range t.Plan.Protected {
		protected[p.Target] = true
	}
	var bases []string // what a path's components are counted from
	for _, b := range []string{t.ProjectRoot, t.Home} {
		if b != "" {
			bases = append(bases, filepath.Clean(b))
			if real, err := filepath.EvalSymlinks(b); err == nil {
				bases = append(bases, real)
			}
		}
	}
	for _, m := range mounts(t) {
		if m.Mode != compiler.ReadWrite {
			continue
		}
		paths := []string{m.Host}
		if real, err := filepath.EvalSymlinks(m.Host); err == nil && real != m.Host {
			paths = append(paths, real)
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
		entries, _ := os.ReadDir(m.Host)
		var open []string
		for _, e := range entries {
			if protect.Match(e.Name()) == "" || protected[path.Join(m.Target, e.Name())] {
				continue
			}
			if fixed && protect.Except(e.Name(), t.Plan.Unprotected) != "" {
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
