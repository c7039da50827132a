// Package readback is the vocabulary lint reads servers in: a Target is
// one server, from a policy (its plan) or read back from what a client
// entry's launch command or a Kubernetes manifest starts (the plan the
// reverse parsers beside the emitters recover, and Flags: what the command
// line or manifest says beyond it). The readers fill it; lint judges it.
// It holds a compiler.Plan, so it sits beside the compiler, not in a leaf.
package readback

import (
	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/internal/backendtraits"
	"github.com/mcpolicy/mcpolicy/internal/position"
)

// Target is one server to lint: from a policy (Plan set, Flags empty) or
// from a client config entry (Plan reverse-parsed from its launch command
// where possible, Flags holding what the command line says beyond it).
type Target struct {
	Server string
	File   string       // where it is declared
	Pos    position.Pos // the server's entry
	Origin Origin
	// Plan is what the server is granted; nil when the launch command
	// could not be read as a confinement (e.g. npx run on the host).
	Plan *compiler.Plan
	// Launcher is the program the entry starts, as written: "docker",
	// "podman", "bwrap", "sandbox-exec", "npx", "node"..., or OwnLauncher.
	Launcher string
	// Flags are launch-command facts the plan cannot express, each with
	// the position of the argument that says it.
	Flags []Flag
	// Remote is set for url/http/sse entries: another machine runs them.
	Remote string
	// ProjectRoot is the folder the entry works on, when known: parent
	// mounts are measured against it.
	ProjectRoot string
	// Home is the home folder of the machine the config is for, "" when
	// unknown (a config for another machine: ~ is then judged as written).
	Home string
	// OnThisMachine: the target's paths are this machine's (a policy, a
	// client config in the project or project-scope, --this-machine), so
	// rules may look at the files they name. Otherwise every judgement is
	// lexical: nothing on this machine is read for it.
	OnThisMachine bool
	// Artefact and Digest are set for an entry that starts a committed
	// artefact through mcpolicy-launch, or a plan through mcpolicy run:
	// the file and the digest the entry pins (check reports a file that
	// no longer has it).
	Artefact, Digest string
	// CompilesPolicy is set for an egress entry of the form earlier
	// versions wrote (mcpolicy run --policy ... --plan HASH), which
	// compiles the policy at every spawn: check asks for it to be written
	// again.
	CompilesPolicy bool
	// RunNotPinned says why an mcpolicy run entry is neither the line
	// `mcpolicy client` writes nor the earlier form: no --sha256, or a
	// flag or a command added to the pinned line (mcpolicy run starts
	// them, so what runs is not the plan the entry pins): check reports it.
	RunNotPinned string
	// Unbuildable are the reasons a backend the policy lists cannot build
	// the plan (set by whoever can ask the emitters: build.Problems).
	Unbuildable []Problem
	// FixedTop is set when the launcher fixes the top level of a
	// read-write mount of the project and binds every protected entry in
	// it read-only at spawn (policies, entries through mcpolicy-launch).
	FixedTop bool
	// EnvPassed are the variables the entry itself gives the server a value
	// for: its "env" object's keys (a value or a reference the client
	// expands) and Codex's env_vars.
	EnvPassed []string
	// EnvFixed are those of EnvPassed the entry sets to a fixed value (a
	// literal, not a reference the client expands to its own): a grant of
	// one reaches the server as that value, not the user's.
	EnvFixed []string
	// EnvFile is the file mcpolicy-launch (or run, exec) takes the values
	// of the plan's env grants from (--env-file), "" when none.
	EnvFile string
	// ImagePos is where a container entry names its image (zero when it
	// names none); Pull is its --pull policy as written ("" when none),
	// PullPos where.
	ImagePos position.Pos
	Pull     string
	PullPos  position.Pos
	// EnvInherited reports whether the client passes a variable of its own
	// environment to the server without the entry naming it (nil: unknown,
	// taken as yes). Claude Desktop, Windsurf, Cline and Codex pass only a
	// few (HOME, PATH...); Gemini CLI redacts secret-looking names.
	EnvInherited func(name string) bool
	// Disabled: the entry is turned off in its client ("disabled": true,
	// opencode's and Goose's "enabled": false): the client does not start
	// it, so its findings are reported at info and do not fail the run.
	Disabled bool `json:"disabled,omitempty"`
}

// Passes reports whether the server can receive a value for the variable:
// the entry names it, names an env file, or the client passes it on.
func (t *Target) Passes(name string) bool {
	for _, n := range t.EnvPassed {
		if n == name {
			return true
		}
	}
	return t.EnvFile != "" || t.EnvInherited == nil || t.EnvInherited(name)
}

// OwnLauncher is a Target's Launcher when mcpolicy starts the server from
// what build wrote: mcpolicy-launch with a pinned artefact, mcpolicy run
// with a pinned plan file, or a wrapper of build's. The policy is linted on
// its own, and check compares the pins.
const OwnLauncher = "mcpolicy"

// Origin says where a target comes from.
type Origin string

const (
	FromPolicy Origin = "policy"
	FromClient Origin = "client"
)

// Flag is one fact read off a launch command.
type Flag struct {
	Kind  FlagKind
	Value string // e.g. the capability for CapAdd, "host" for HostNamespace
	Pos   position.Pos
}

// FlagKind names a launch-command fact rules look at.
type FlagKind string

const (
	FlagPrivileged        FlagKind = "privileged"         // docker --privileged
	FlagCapAdd            FlagKind = "cap-add"            // docker --cap-add X
	FlagNoCapDrop         FlagKind = "no-cap-drop"        // docker without --cap-drop ALL
	FlagNoNewPrivsMissing FlagKind = "no-new-privs"       // docker without --security-opt no-new-privileges
	FlagNoReadOnly        FlagKind = "no-read-only"       // docker without --read-only
	FlagRootUser          FlagKind = "root-user"          // docker without --user, or --user 0/root
	FlagNetwork           FlagKind = "network"            // docker --network X (Value), or none given
	FlagHostNamespace     FlagKind = "host-namespace"     // --pid/--ipc/--uts/--userns host (Value: which)
	FlagSeccompUnconfined FlagKind = "seccomp-unconfined" // --security-opt seccomp=unconfined
	FlagAppArmorUnconf    FlagKind = "apparmor-unconfined"
	FlagUnboundedTmpfs    FlagKind = "unbounded-tmpfs" // --tmpfs without size=
	FlagDockerSocket      FlagKind = "docker-socket"   // a mount of the engine's socket
	FlagSecretInline      FlagKind = "secret-inline"   // a secret in -e KEY=value, an env or header value, an argument or a url (Value: the key, the option, or "an argument (what)")
	FlagUnknown           FlagKind = "unknown-flag"    // a flag the reader does not know (Value: the flag)
	FlagBwrapNoNewSession FlagKind = "bwrap-no-new-session"
	FlagBwrapNoDie        FlagKind = "bwrap-no-die-with-parent"
	FlagBwrapShareNet     FlagKind = "bwrap-share-net"
	FlagBwrapBindRoot     FlagKind = "bwrap-bind-root"
	FlagSeatbeltFinding   FlagKind = backendtraits.Seatbelt // a checker error in the profile (Value: the message)
	FlagSeatbeltWrapper   FlagKind = "seatbelt-wrapper"     // a seatbelt wrapper that does not start the server through env -i (Value: the file and why)
	FlagUnconfined        FlagKind = "unconfined"           // npx/uvx/node/python... run directly on the host
	FlagHostGrant         FlagKind = "host-grant"           // a host-run server is handed a home folder, a credential store, a drive root or / (Value: what, a phrase)
	FlagClientSandbox     FlagKind = "client-sandbox"       // run under a client's sandbox: VS Code sandboxEnabled, srt (Value: what it enforces and leaves open)
	FlagStdio             FlagKind = "stdio"                // a stdio container with -t, -d or without -i (Value: which)
	FlagJoinedArg         FlagKind = "joined-arg"           // an option and its value in one argument, "-e X=Y" (Value: the argument)
	FlagEnvAsImage        FlagKind = "env-value-as-image"   // -e NAME value: the engine takes value as the image (Value: "NAME value")
	FlagEnvNotPassed      FlagKind = "env-not-passed"       // set in the entry's env, never passed into the container (Value: the name)
	FlagAutoApprove       FlagKind = "auto-approve"         // autoApprove/alwaysAllow lists, Gemini trust (Value: what)
	FlagDangerousMode     FlagKind = "dangerous-mode"       // --dangerously-skip-permissions, --yolo, ALLOW_ALL=true... (Value: the switch)
	// FlagHomeUnexpanded: a stdio entry's command or argument names the
	// home folder in a form its client does not expand (Value: the
	// argument, what the server receives and why, a phrase).
	FlagHomeUnexpanded FlagKind = "home-unexpanded"
	// FlagUnconfinedShell: a server nothing confines starts through a
	// shell's command string (sh -c, bash -lc, cmd /c, PowerShell
	// -Command, wsl) (Value: the server and the shell, a phrase).
	FlagUnconfinedShell FlagKind = "unconfined-shell"
	// FlagUserFolder: a server nothing confines (or a client sandbox that
	// leaves reads open) is handed one of the user's folders (Desktop,
	// Documents, ~/projects...), a drive's top-level folder or a volume
	// (Value: what, a phrase). UNCONFINED_WIDE_GRANT reports it with
	// FlagHostGrant; import grants it, which it refuses for those.
	FlagUserFolder FlagKind = "user-folder"
	// FlagVarUnexpanded: a variable reference in an argument or env value
	// that the entry's client does not expand (Value: what, a phrase).
	FlagVarUnexpanded FlagKind = "var-unexpanded"
	// FlagUnconfinedSecret: a server nothing confines is handed a secret:
	// a secret-named variable or option, by value or by reference (Value:
	// what, a phrase).
	FlagUnconfinedSecret FlagKind = "unconfined-secret"
	// FlagHeadersHelper: a remote entry's command the client runs in a
	// shell on the host for its headers (Claude Code's headersHelper)
	// (Value: what, a phrase).
	FlagHeadersHelper FlagKind = "headers-helper"
	// Wrappers and runtimes that confine by their own means (clientcfg's
	// wrappers.go, deno.go).
	FlagRuntimePermissions FlagKind = "runtime-permissions" // deno run without -A: what Deno's permissions grant (Value: a phrase)
	FlagRuntimeEnvAll      FlagKind = "runtime-env-all"     // deno --allow-env without a list (Value: a phrase)
	FlagToolHive           FlagKind = "toolhive"            // thv run/proxy: ToolHive's container and permission profile (Value: what it enforces)
	FlagCommandLine        FlagKind = "command-line"        // "command" holds a whole command line (Value: the command as written)

	// Kubernetes manifests (a Pod, or a workload's Pod template), read by
	// emit/kubernetes: each at the field that says it, or at the container.
	FlagK8sPrivileged    FlagKind = "k8s-privileged"     // securityContext.privileged: true
	FlagK8sHostNamespace FlagKind = "k8s-host-namespace" // hostNetwork, hostPID or hostIPC: true (Value: the field)
	FlagK8sCapabilities  FlagKind = "k8s-capabilities"   // no capabilities.drop [ALL], or an add (Value: what)
	FlagK8sWritableRoot  FlagKind = "k8s-writable-root"  // readOnlyRootFilesystem not true
	FlagK8sEscalation    FlagKind = "k8s-escalation"     // allowPrivilegeEscalation not false (Value: as written, "" when absent)
	FlagK8sRoot          FlagKind = "k8s-root"           // runAsNonRoot not true (Value: "runAsUser 0" when it says root)
	FlagK8sHostPath      FlagKind = "k8s-hostpath"       // a hostPath volume (Value: its path)
	FlagK8sHostPathWrite FlagKind = "k8s-hostpath-write" // a hostPath volume mounted read-write (Value: path -> mountPath)
	FlagK8sSecretValue   FlagKind = "k8s-secret-value"   // env value: a secret written in the manifest (Value: the name)

	// Secrets a client entry asks for inline, or puts in argv (issue 35).
	FlagSecretPlaceholder FlagKind = "secret-placeholder" // a placeholder where a secret goes: YOUR_TOKEN_HERE, <token>, Bearer YOUR_PAT (Value: the variable, header or option, or "an argument")
	FlagSecretInArgv      FlagKind = "secret-in-argv"     // a secret reference expanded into argv: ${input:ID} of a password input, ${env:TOKEN} (Value: what, a phrase)

	// Container and sandbox escapes (issue 35).
	FlagHostDevice  FlagKind = "host-device"  // docker --device X, bwrap --dev-bind SRC (Value: the option and what)
	FlagSecurityOff FlagKind = "security-off" // --security-opt label=disable, systempaths=unconfined, unmask=... (Value: as written)
)

// Problem is why a backend refuses a plan, at the position that asks for it.
type Problem struct {
	Pos position.Pos
	Msg string
}
