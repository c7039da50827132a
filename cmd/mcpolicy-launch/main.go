//go:build linux

// Command mcpolicy-launch is what client entries run: the small launcher
// that starts a server from a reviewed artefact, checking first that the
// artefact and the mount sources are what was reviewed. It links no CUE:
// Go package initialisation is most of a launch's cost, and a client that
// spawns a server per request pays it every time.
//
//	mcpolicy-launch [--project-root DIR] [--bwrap PATH] --sha256 HEX ARTEFACT    .mcpolicy/bwrap/S.json or .mcpolicy/landlock/S.json
//	mcpolicy-launch --engine ENGINE --project-root DIR --sha256 HEX ARTEFACT -- run ARGS...   docker or podman
//	mcpolicy-launch [-v] RULESET.json         a Landlock ruleset, unverified (by hand)
//	mcpolicy-launch --version                 the version, its commit and date (package buildversion)
//
// --env-file FILE (before the artefact or --): the values of the plan's env
// grants that the launcher's environment does not set come from FILE, for
// clients that pass on no environment of their own (see launch.EnvFile for
// what FILE must be: outside every grant, mode 600, no symlink).
//
// The digest comes from the client entry, which a server cannot write: the
// artefact is read once, and only those bytes are used. ${PROJECT_ROOT} is
// $PROJECT_ROOT, or the folder three levels above the artefact
// (PROJECT/.mcpolicy/BACKEND/SERVER.json); ${HOME} is $HOME. Client entries
// pass --project-root: an entry that lost its environment must not lose the
// fixed top level with it (--engine refuses to start without a root).
// A project's committed entry (.mcp.json, .vscode/mcp.json) names the
// launcher, the engine and bwrap without a path (found on PATH at spawn)
// and the root by the client's variable: --project-root ${workspaceFolder},
// or --project-root-env CLAUDE_PROJECT_DIR with the artefact, the programs
// and the engine arguments' project paths relative to it (./.mcpolicy/...,
// source=./data). Either way the launcher, the engine and bwrap it runs must
// lie outside every read-write grant of the project's servers (read from
// the plans build wrote beside the artefact), or nothing starts (exit 8).
// With --engine the `run` arguments stay inline, readable in the client
// file, and must be word for word what the pinned .mcpolicy/docker/S.json
// expands to (launch.EnginePinned): a hand-added --mount is refused, exit 8.
// What the launcher enforces beyond them (the names the policy unprotects,
// the programs the entry must pin) it reads from their labels, so pinned
// with them; --unprotect, which entries once carried, is refused.
//
// --program-sha256 PATH=sha256:HEX (repeatable): a file the server runs
// that a read-write grant of the policy holds, pinned by the entry; the
// artefact lists the files it requires pinned (programPins).
//
// Every launch leaves a line in its server's log,
// $XDG_STATE_HOME/mcpolicy/logs/PROJECT-SERVER.log (package launchlog): a
// refusal with its fix, or the server's end and its last stderr lines. So
// the launcher stays beside bwrap and the engine, as it does beside
// Landlock's namespaces: it forwards the signals it gets, passes stdin and
// stdout on untouched, tees stderr, and ends as the sandbox ended.
//
// An artefact that pins a tool surface (its "tools" digest, or the
// engine's org.mcpolicy.tools label) has stdin and stdout relayed instead
// (runtime/toolrelay): the launcher reads PROJECT/.mcpolicy/tools/SERVER.json
// below the project root without following a symlink, uses it only when
// its digest is the artefact's (else exit 8: run `mcpolicy build`), and
// logs each refusal or hidden tool as a line of the server's launch log.
//
// Exit codes: the server's own; 8 when the artefact's digest differs, the
// engine arguments are not the artefact's, the tool surface it pins is
// missing or differs, a pinned program's digest
// differs (or its pin is missing), or a mount source is (or passes
// through) a symlink: nothing is started; 4 when
// this machine cannot enforce the confinement; 1 on a usage or read error;
// 126 when the Landlock launcher failed inside its namespaces.
//
// It is Linux-only (the build constraint above): every mode needs Linux —
// bwrap, Landlock and mount namespaces, openat2 for the mount sources, and
// with --engine it is bound into the Linux container as the mount
// verifier. On macOS nothing runs it: seatbelt entries start the profile's
// wrapper, and `go install ./cmd/...` there installs mcpolicy alone.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/buildversion"
	"github.com/mcpolicy/mcpolicy/internal/exitcode"
	"github.com/mcpolicy/mcpolicy/internal/printable"
	"github.com/mcpolicy/mcpolicy/runtime/egress/forwarder"
	"github.com/mcpolicy/mcpolicy/runtime/launch"
	"github.com/mcpolicy/mcpolicy/runtime/launchlog"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == forwarder.Command {
		os.Exit(forwarder.Main(os.Args[2:])) // inside a sandbox of mcpolicy run: the egress forwarder
	}
	if len(os.Args) > 1 && os.Args[1] == launch.Stage2Arg {
		launch.Stage2()
	}
	if len(os.Args) > 2 && os.Args[1] == launch.RelayArg {
		launch.Relay(os.Args[2]) // between a terminal and the server's pipe
	}
	if len(os.Args) > 1 && os.Args[1] == launch.VerifyMountsArg {
		exit(launch.VerifyMounts(os.Args[2:])) // inside a container: check the mounts, exec the server
	}
	if len(os.Args) > 2 && os.Args[1] == launch.HandoverArg {
		os.Exit(handedOver(os.Args[2])) // `mcpolicy exec`'s launch, run here in its place
	}
	verbose := flag.Bool("v", false, "say on stderr what is enforced")
	showVersion := flag.Bool("version", false, "print the version, its commit and date, and exit")
	digest := flag.String("sha256", "", "the artefact's SHA-256, as the client entry carries it: refuse (exit 8) any other content")
	engine := flag.String("engine", "", "docker or podman (or its path): check the `run` arguments after -- and run them")
	projectRoot := flag.String("project-root", "", "the project folder ${PROJECT_ROOT} stands for (default: $PROJECT_ROOT; with --sha256, else three folders above the artefact)")
	rootEnv := flag.String("project-root-env", "", "take the project folder from this variable, which the client sets (Claude Code's CLAUDE_PROJECT_DIR); the entry's relative paths are the project's")
	bwrapPath := flag.String(artefact.BwrapProgram, "", "bwrap's absolute path (default: found on PATH)") // --bwrap: named after the program
	envFile := flag.String("env-file", "", "take the values of the plan's env grants that the environment does not set from this file (NAME=value lines, mode 600, outside every grant)")
	var unprotected, programs names
	flag.Var(&programs, artefact.ProgramFlag, "PATH=sha256:HEX: a program of the server's that a read-write grant holds, as the client entry pinned it: refuse (exit 8) other bytes (repeatable)")
	flag.Var(&unprotected, "unprotect", "refused: the unprotected names come from the pinned artefact")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: mcpolicy-launch --sha256 HEX ARTEFACT\n       mcpolicy-launch --engine ENGINE --sha256 HEX ARTEFACT -- run ARGS...\n       mcpolicy-launch [-v] RULESET.json\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *showVersion {
		fmt.Print(buildversion.Read().Text("mcpolicy-launch"))
		os.Exit(0)
	}
	if err := launch.CloseInherited(); err != nil {
		exit(err)
	}
	var say io.Writer
	if *verbose {
		say = os.Stderr
	}
	// The launch's record (launchlog): a refusal, or the server's end and
	// its last stderr lines, for `mcpolicy doctor --server`.
	log := launchlog.New("mcpolicy-launch", os.Getenv, os.Stderr)
	if err := launch.ShieldTerminals(say); err != nil {
		exitLogged(err, log)
	}
	code, err := launch.Run(launch.Request{Digest: *digest, Engine: *engine, ProjectRoot: *projectRoot, RootEnv: *rootEnv, Bwrap: *bwrapPath,
		EnvFile: *envFile, Programs: programs, Unprotected: unprotected, Args: flag.Args(), Say: say, Log: log})
	if errors.Is(err, launch.ErrUsage) {
		flag.Usage()
		os.Exit(exitcode.Error)
	}
	var se *launch.SignaledError
	if errors.As(err, &se) { // the sandbox died of a signal: so does its launcher
		launch.Reraise(se.Signal)
		os.Exit(128 + int(se.Signal))
	}
	exitLogged(err, log)
	os.Exit(code)
}

// handedOver runs the launch `mcpolicy exec` handed over and returns what
// exec would have: the server's exit code, or its refusal logged and said
// as mcpolicy says it, with mcpolicy's exit code.
func handedOver(fd string) int {
	code, log, err := launch.HandedOver(fd)
	if err == nil {
		return code
	}
	log.Refuse(err, launch.RefusalFix(err))
	fmt.Fprintf(os.Stderr, "mcpolicy: %s\n", printable.Text(err.Error()))
	var ue *launch.UnsupportedError
	var te *launch.TamperError
	switch {
	case errors.As(err, &te):
		return exitcode.Tampered
	case errors.As(err, &ue):
		return exitcode.Unsupported
	}
	return exitcode.Error
}

// exitLogged is exit, the refusal logged first with its fix.
func exitLogged(err error, log *launchlog.Launch) {
	if err != nil {
		log.Refused(err.Error(), launch.RefusalFix(err))
	}
	exit(err)
}

func exit(err error) {
	var ue *launch.UnsupportedError
	var te *launch.TamperError
	switch {
	case err == nil:
		return
	case errors.As(err, &te):
		fmt.Fprintf(os.Stderr, "mcpolicy-launch: refused: %v\n", err)
		os.Exit(exitcode.Tampered)
	case errors.As(err, &ue):
		fmt.Fprintf(os.Stderr, "mcpolicy-launch: %v\n", err)
		os.Exit(exitcode.Unsupported)
	default:
		fmt.Fprintf(os.Stderr, "mcpolicy-launch: %v\n", err)
		os.Exit(exitcode.Error)
	}
}

// names collects a repeatable flag.
type names []string

func (n *names) String() string     { return fmt.Sprint(*n) }
func (n *names) Set(v string) error { *n = append(*n, v); return nil }
