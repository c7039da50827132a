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
// Exit codes: the server's own; 8 when the artefact's digest differs, the
// engine arguments are not the artefact's, a pinned program's digest
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
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/backend"
	"github.com/mcpolicy/mcpolicy/internal/exitcode"
	"github.com/mcpolicy/mcpolicy/internal/writereport"
	"github.com/mcpolicy/mcpolicy/runtime/launch"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == launch.Stage2Arg {
		launch.Stage2()
	}
	if len(os.Args) > 2 && os.Args[1] == launch.RelayArg {
		launch.Relay(os.Args[2]) // between a terminal and the server's pipe
	}
	if len(os.Args) > 1 && os.Args[1] == launch.VerifyMountsArg {
		exit(launch.VerifyMounts(os.Args[2:])) // inside a container: check the mounts, exec the server
	}
	verbose := flag.Bool("v", false, "say on stderr what is enforced")
	digest := flag.String("sha256", "", "the artefact's SHA-256, as the client entry carries it: refuse (exit 8) any other content")
	engine := flag.String("engine", "", "docker or podman (or its path): check the `run` arguments after -- and run them")
	projectRoot := flag.String("project-root", "", "the project folder ${PROJECT_ROOT} stands for (default: $PROJECT_ROOT; with --sha256, else three folders above the artefact)")
	bwrapPath := flag.String(launch.BwrapProgram, "", "bwrap's absolute path (default: found on PATH)") // --bwrap: named after the program
	envFile := flag.String("env-file", "", "take the values of the plan's env grants that the environment does not set from this file (NAME=value lines, mode 600, outside every grant)")
	var unprotected, programs names
	flag.Var(&programs, launch.ProgramFlag, "PATH=sha256:HEX: a program of the server's that a read-write grant holds, as the client entry pinned it: refuse (exit 8) other bytes (repeatable)")
	flag.Var(&unprotected, "unprotect", "refused: the unprotected names come from the pinned artefact")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: mcpolicy-launch --sha256 HEX ARTEFACT\n       mcpolicy-launch --engine ENGINE --sha256 HEX ARTEFACT -- run ARGS...\n       mcpolicy-launch [-v] RULESET.json\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if err := launch.CloseInherited(); err != nil {
		exit(err)
	}
	var say io.Writer
	if *verbose {
		say = os.Stderr
	}
	if err := launch.ShieldTerminals(say); err != nil {
		exit(err)
	}
	var (
		code int
		err  error
	)
	switch {
	case len(unprotected) > 0:
		err = launch.UnprotectFlags(unprotected)
	case *engine != "":
		err = runEngine(*engine, *digest, flag.Args(), root(*projectRoot, ""), programs, *envFile, say)
	case flag.NArg() != 1:
		flag.Usage()
		os.Exit(exitcode.Error)
	default:
		code, err = run(flag.Arg(0), *digest, *projectRoot, *bwrapPath, *envFile, programs, *verbose)
	}
	exit(err)
	os.Exit(code)
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

// root is the project root: the flag, else $PROJECT_ROOT, else def.
func root(flagValue, def string) string {
	switch {
	case flagValue != "":
		return flagValue
	case os.Getenv("PROJECT_ROOT") != "":
		return os.Getenv("PROJECT_ROOT")
	}
	return def
}

func runEngine(engine, digest string, args []string, root string, programs []string, envFile string, say io.Writer) error {
	// ARTEFACT -- run ARGS...: flag parsing stops at the artefact, so the
	// -- is still there; an entry without one pins nothing (refused).
	var artefact string
	if len(args) > 1 && args[1] == "--" {
		artefact, args = args[0], args[2:]
	}
	args, err := launch.EnginePinned(artefact, digest, root, os.Getenv("HOME"), args)
	if err != nil {
		return err
	}
	// From the verified arguments only: a flag is what a hand edit adds.
	unprotected, required := launch.EngineRequired(args)
	if err := launch.CheckPrograms(required, programs, root, os.Getenv("HOME")); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	// The engine reads the seccomp profile from this descriptor, which it
	// inherits across the exec.
	profile, err := launch.EngineSeccomp()
	if err != nil {
		return err
	}
	defer profile.Close()
	// This launcher, bound read-only into the container, checks the mounts
	// there before the server starts.
	run, err := launch.Engine{Path: engine, Root: root, Home: os.Getenv("HOME"), Unprotected: unprotected, Verifier: self,
		Seccomp: "/proc/self/fd/" + strconv.Itoa(int(profile.Fd()))}.Prepare(args)
	if err != nil {
		return err
	}
	environ, err := launch.WithEnvFile(os.Environ(), launch.EnvFile{Path: envFile, Grants: append(launch.EngineSources(run), root)}, engineEnvNames(run))
	if err != nil {
		return err
	}
	// Detached: the container outlives a killed `run` process.
	if _, err := launch.RecordSession(writereport.Session{Project: root, Server: launch.EngineServer(run), Backend: filepath.Base(engine),
		Detached: true, Writable: launch.EngineWritable(run)}, os.Getenv, say, os.Stderr); err != nil {
		return err
	}
	return launch.EngineExec(engine, run, environ)
}

// engineEnvNames are the variables `run` passes through by name (-e NAME).
func engineEnvNames(args []string) []string {
	var out []string
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "-e" || args[i] == "--env" {
			if n := args[i+1]; !strings.Contains(n, "=") {
				out = append(out, n)
			}
			i++
		}
	}
	return out
}

func run(file, digest, projectRoot, bwrapPath, envFile string, programs []string, verbose bool) (int, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return 0, err
	}
	var b []byte
	if digest != "" {
		b, err = launch.ReadVerified(abs, digest)
	} else {
		b, err = os.ReadFile(abs)
	}
	if err != nil {
		return 0, err
	}
	root := root(projectRoot, filepath.Dir(filepath.Dir(filepath.Dir(abs))))
	if digest != "" {
		// What the entry pins decides where its grants land too.
		if err := launch.PinnedRoot(abs, root); err != nil {
			return 0, err
		}
	}
	home := os.Getenv("HOME")
	var kind struct {
		Backend string `json:"backend"`
	}
	if err := json.Unmarshal(b, &kind); err != nil {
		return 0, fmt.Errorf("%s: not an artefact: %v", file, err)
	}
	if kind.Backend == launch.BwrapProgram {
		spec, err := launch.DecodeBwrap(b)
		if err != nil {
			return 0, fmt.Errorf("%s: %v", file, err)
		}
		if err := launch.CheckPrograms(spec.ProgramPins, programs, root, home); err != nil {
			return 0, err
		}
		environ, err := launch.WithEnvFile(os.Environ(), launch.EnvFile{Path: envFile, Grants: append(launch.BwrapSources(spec, root, home), root)}, spec.Env)
		if err != nil {
			return 0, err
		}
		var bw *launch.Bwrap
		if bwrapPath != "" {
			bw, err = launch.PrepareBwrapAt(spec, root, home, environ, bwrapPath)
		} else {
			bw, err = launch.PrepareBwrap(spec, root, home, environ)
		}
		if err != nil {
			return 0, err
		}
		if _, err := launch.RecordSession(writereport.Session{Project: root, Server: spec.Server, Backend: launch.BwrapProgram, Artefact: abs, Digest: digest,
			Writable: launch.BwrapWritable(spec, root, home)}, os.Getenv, say(verbose), os.Stderr); err != nil {
			return 0, err
		}
		return 0, bw.Exec()
	}
	var rs launch.Ruleset
	if err := json.Unmarshal(b, &rs); err != nil {
		return 0, fmt.Errorf("%s: not a ruleset: %v", file, err)
	}
	if len(rs.Command) == 0 {
		return 0, fmt.Errorf("%s: the ruleset has no command", file)
	}
	if err := rs.Resolve(root, home); err != nil {
		return 0, fmt.Errorf("%s: %v", file, err)
	}
	if err := launch.CheckPrograms(rs.ProgramPins, programs, root, home); err != nil {
		return 0, err
	}
	if err := rs.CheckSources(root, home); err != nil {
		return 0, err
	}
	environ, err := launch.WithEnvFile(os.Environ(), launch.EnvFile{Path: envFile, Grants: append(append(append(append([]string{}, rs.Baseline...), rs.ReadOnly...), rs.ReadWrite...), root)}, rs.Env)
	if err != nil {
		return 0, err
	}
	opts := launch.Options{Environ: environ, ProjectRoot: root, Home: home}
	if verbose {
		opts.Verbose = os.Stderr
	}
	// Detached until its namespaces are gone: without them a daemon may
	// outlive the server, and the launcher cannot see it.
	rec, err := launch.RecordSession(writereport.Session{Project: root, Server: rs.Server, Backend: backend.Landlock, Artefact: abs, Digest: digest,
		Detached: true, Writable: rs.ReadWrite}, os.Getenv, opts.Verbose, os.Stderr)
	if err != nil {
		return 0, err
	}
	opts.Contained = rec.End
	return launch.Start(&rs, opts)
}

// say is stderr with -v, else nothing.
func say(verbose bool) io.Writer {
	if verbose {
		return os.Stderr
	}
	return nil
}
