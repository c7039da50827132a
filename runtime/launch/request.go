package launch

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/toolpolicy"
	"github.com/mcpolicy/mcpolicy/internal/writereport"
	"github.com/mcpolicy/mcpolicy/runtime/launchlog"
)

// Request is one start of mcpolicy-launch, as its flags say it (see
// cmd/mcpolicy-launch for what each means).
type Request struct {
	Digest      string   // --sha256: the artefact's digest the entry pins
	Engine      string   // --engine: docker or podman; Args then hold ARTEFACT -- run ...
	ProjectRoot string   // --project-root ("": $PROJECT_ROOT, else three folders above the artefact)
	RootEnv     string   // --project-root-env: the variable the client sets to the project root; the entry's paths are relative to it
	Bwrap       string   // --bwrap: bwrap's absolute path
	EnvFile     string   // --env-file
	Programs    []string // --program-sha256 PATH=sha256:HEX
	Unprotected []string // --unprotect: refused
	Args        []string // after the flags
	Say         io.Writer
	// Log is this launch's record (nil: none): the launcher stays beside
	// the sandbox to see its end and stderr (runBeside).
	Log *launchlog.Launch
}

// ErrUsage is a request that names no artefact (or more than one).
var ErrUsage = errors.New("usage: mcpolicy-launch --sha256 HEX ARTEFACT, or --engine ENGINE --sha256 HEX ARTEFACT -- run ARGS")

// Run starts what r names: an engine's `run` (--engine), a bwrap spec or a
// Landlock ruleset (one artefact). It returns the server's exit code (or a
// SignaledError): the launcher stays beside the sandbox and waits for it,
// but for Landlock without namespaces, where the process becomes the
// server and returns only on an error.
func Run(r Request) (int, error) {
	if len(r.Unprotected) > 0 {
		r.nameLog()
		return 0, UnprotectFlags(r.Unprotected)
	}
	r, err := r.rooted()
	if err != nil {
		r.nameLog()
		return 0, err
	}
	r.nameLog()
	switch {
	case r.Engine != "":
		return startEngine(r, projectRootOf(r.ProjectRoot, "", os.Getenv))
	case len(r.Args) != 1:
		return 0, ErrUsage
	}
	return startArtefact(r)
}

// rooted takes the project root from r.RootEnv, when the entry names one:
// then the entry's paths are relative to it, and shown as such.
func (r Request) rooted() (Request, error) {
	if r.RootEnv == "" {
		return r, nil
	}
	if r.ProjectRoot != "" {
		return r, fmt.Errorf("--project-root and --project-root-env: give one")
	}
	root, err := RootFromEnv(r.RootEnv, os.Getenv)
	if err != nil {
		return r, err
	}
	r.ProjectRoot = root
	r.Programs = rootedPins(root, r.Programs)
	if r.Engine != "" && len(r.Args) > 1 && r.Args[1] == "--" {
		r.Args = append([]string{UnderRoot(root, r.Args[0])}, r.Args[1:]...)
	} else if r.Engine == "" && len(r.Args) == 1 {
		r.Args = []string{UnderRoot(root, r.Args[0])}
	}
	return r, nil
}

// shownRoot is how the entry spells the project root in the paths it
// carries: "." when they are relative to a root the client gives.
func (r Request) shownRoot(root string) string {
	if r.RootEnv != "" {
		return "."
	}
	return root
}

// programsOutside refuses a launch whose launcher, engine or bwrap a
// server of the project may write (ProgramsOutsideGrants). A launcher
// started by name (a committed entry's, found on PATH) or from an entry
// that takes its root from the client needs the project's plans to check
// against; one started by path was checked by `mcpolicy client`, and is
// checked against the plans that are there.
func (r Request) programsOutside(artefactFile, root, home string, tool Program) error {
	writable, err := ProjectWritable(artefactFile, root, home)
	portable := r.RootEnv != "" || portableByName()
	if err != nil {
		if portable {
			return err
		}
		return nil
	}
	var programs []Program
	if self, err := selfPath(); err == nil {
		programs = append(programs, Program{"the launcher", self})
	}
	programs = append(programs, tool)
	if portable {
		// What PATH finds decides what the next spawn runs: a folder on
		// it that a server may write is where it would put its own
		// mcpolicy-launch, docker or bwrap.
		for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
			if abs, err := filepath.Abs(dir); err == nil {
				programs = append(programs, Program{"the PATH folder", abs})
			}
		}
	}
	return ProgramsOutsideGrants(programs, writable)
}

// nameLog names the launch's record from the artefact's path
// (PROJECT/.mcpolicy/BACKEND/SERVER.json) before it is read: a refusal
// of an artefact that cannot be read is logged under the server too.
func (r Request) nameLog() {
	if r.Log == nil || len(r.Args) == 0 || !strings.HasSuffix(r.Args[0], ".json") {
		return
	}
	abs, err := filepath.Abs(r.Args[0])
	if err != nil {
		return
	}
	def := ""
	if r.Engine == "" {
		def = filepath.Dir(filepath.Dir(filepath.Dir(abs)))
	}
	backend := filepath.Base(filepath.Dir(abs))
	if r.Engine != "" {
		backend = filepath.Base(r.Engine)
	}
	r.Log.Set(projectRootOf(r.ProjectRoot, def, os.Getenv), strings.TrimSuffix(filepath.Base(abs), ".json"), backend, "")
}

// projectRootOf is the project root: the flag, else $PROJECT_ROOT, else def.
func projectRootOf(flagValue, def string, getenv func(string) string) string {
	switch {
	case flagValue != "":
		return flagValue
	case getenv("PROJECT_ROOT") != "":
		return getenv("PROJECT_ROOT")
	}
	return def
}

func startEngine(r Request, root string) (int, error) {
	engine, digest, args, programs, envFile, say, log := r.Engine, r.Digest, r.Args, r.Programs, r.EnvFile, r.Say, r.Log
	// ARTEFACT -- run ARGS...: flag parsing stops at the artefact, so the
	// -- is still there; an entry without one pins nothing (refused).
	var pinned string
	if len(args) > 1 && args[1] == "--" {
		pinned, args = args[0], args[2:]
	}
	args, err := EnginePinnedShown(pinned, digest, root, r.shownRoot(root), os.Getenv("HOME"), args)
	if err != nil {
		return 0, err
	}
	enginePath, _ := exec.LookPath(engine)
	if err := r.programsOutside(pinned, root, os.Getenv("HOME"), Program{"the engine", enginePath}); err != nil {
		return 0, err
	}
	// From the verified arguments only: a flag is what a hand edit adds.
	unprotected, required := EngineRequired(args)
	if err := CheckPrograms(required, programs, root, os.Getenv("HOME")); err != nil {
		return 0, err
	}
	// The server is the pinned artefact's (ROOT/.mcpolicy/docker/SERVER.json):
	// the arguments' plan label holds the plan's hash.
	server := strings.TrimSuffix(filepath.Base(pinned), ".json")
	tools, err := engineTools(args, root, server)
	if err != nil {
		return 0, err
	}
	sayTools(say, server, tools)
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	// The engine reads the seccomp profile from this descriptor, which it
	// inherits across the exec.
	profile, err := EngineSeccomp()
	if err != nil {
		return 0, err
	}
	defer profile.Close()
	// This launcher, bound read-only into the container, checks the mounts
	// there before the server starts.
	run, err := Engine{Path: engine, Root: root, Home: os.Getenv("HOME"), Unprotected: unprotected, Verifier: self,
		Seccomp: "/proc/self/fd/" + strconv.Itoa(int(profile.Fd()))}.Prepare(args)
	if err != nil {
		return 0, err
	}
	environ, err := WithEnvFile(os.Environ(), EnvFile{Path: envFile, Grants: append(EngineSources(run), root)}, runEnvNames(run))
	if err != nil {
		return 0, err
	}
	// Detached: the container outlives a killed `run` process.
	if _, err := RecordSession(writereport.Session{Project: root, Server: server, Backend: filepath.Base(engine),
		Detached: true, Writable: EngineWritable(run)}, os.Getenv, say, os.Stderr); err != nil {
		return 0, err
	}
	// The record and the relay's decisions go to the server's log, the
	// one nameLog named and doctor --server reads, with the plan's hash.
	log.Set("", server, "", EngineServer(run))
	log.Secrets(environ, runEnvNames(run))
	log.Writable(EngineWritable(run))
	relay, err := NewToolRelay(tools, log)
	if err != nil {
		return 0, err
	}
	return engineBeside(engine, run, environ, log, relay)
}

// engineTools reads server's tool surface, which the verified `run`
// arguments pin (artefact.LabelTools, one label at most): nil when they
// pin none.
func engineTools(args []string, root, server string) (*toolpolicy.Policy, error) {
	var digests []string
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "--label" {
			if v, ok := strings.CutPrefix(args[i+1], artefact.LabelTools+"="); ok {
				digests = append(digests, v)
			}
			i++
		}
	}
	switch len(digests) {
	case 0:
		return nil, nil
	case 1:
		return ReadTools(root, server, digests[0])
	}
	return nil, tampered("the engine arguments carry %d %s labels: one tool surface at most; refusing to start; hint: run `mcpolicy build`", len(digests), artefact.LabelTools)
}

// runEnvNames are the variables `run` passes through by name (-e NAME).
func runEnvNames(args []string) []string {
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

func startArtefact(r Request) (int, error) {
	file, digest, projectRoot, bwrapPath, envFile, programs, say, log := r.Args[0], r.Digest, r.ProjectRoot, r.Bwrap, r.EnvFile, r.Programs, r.Say, r.Log
	abs, err := filepath.Abs(file)
	if err != nil {
		return 0, err
	}
	var b []byte
	if digest != "" {
		b, err = ReadVerified(abs, digest)
	} else {
		b, err = os.ReadFile(abs)
	}
	if err != nil {
		return 0, err
	}
	root := projectRootOf(projectRoot, filepath.Dir(filepath.Dir(filepath.Dir(abs))), os.Getenv)
	if digest != "" {
		// What the entry pins decides where its grants land too.
		if err := PinnedRoot(abs, root); err != nil {
			return 0, err
		}
		bw := bwrapPath
		if bw == "" {
			bw, _ = exec.LookPath(artefact.BwrapProgram)
		}
		if err := r.programsOutside(abs, root, os.Getenv("HOME"), Program{artefact.BwrapProgram, bw}); err != nil {
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
	if kind.Backend == artefact.BwrapProgram {
		spec, err := DecodeBwrap(b)
		if err != nil {
			return 0, fmt.Errorf("%s: %v", file, err)
		}
		log.Set(root, spec.Server, artefact.BwrapProgram, spec.Plan)
		if err := CheckPrograms(spec.ProgramPins, programs, root, home); err != nil {
			return 0, err
		}
		var tools *toolpolicy.Policy
		if spec.Tools != "" {
			if tools, err = ReadTools(root, spec.Server, spec.Tools); err != nil {
				return 0, err
			}
			sayTools(say, spec.Server, tools)
		}
		environ, err := WithEnvFile(os.Environ(), EnvFile{Path: envFile, Grants: append(BwrapSources(spec, root, home), root)}, spec.Env)
		if err != nil {
			return 0, err
		}
		log.Secrets(environ, spec.Env)
		log.Writable(BwrapWritable(&spec.BwrapSpec, root, home))
		var bw *Bwrap
		if bwrapPath != "" {
			bw, err = PrepareBwrapAt(spec, root, home, environ, bwrapPath)
		} else {
			bw, err = PrepareBwrap(spec, root, home, environ)
		}
		if err != nil {
			return 0, err
		}
		if _, err := RecordSession(writereport.Session{Project: root, Server: spec.Server, Backend: artefact.BwrapProgram, Artefact: abs, Digest: digest,
			Writable: BwrapWritable(&spec.BwrapSpec, root, home)}, os.Getenv, say, os.Stderr); err != nil {
			return 0, err
		}
		relay, err := NewToolRelay(tools, log)
		if err != nil {
			return 0, err
		}
		return bw.Beside(log, relay)
	}
	var rs artefact.Ruleset
	if err := decodeArtefact(b, &rs); err != nil {
		return 0, fmt.Errorf("%s: not a ruleset: %v", file, err)
	}
	if len(rs.Command) == 0 {
		return 0, fmt.Errorf("%s: the ruleset has no command", file)
	}
	log.Set(root, rs.Server, artefact.RulesetBackend, rs.Plan)
	if err := resolveRuleset(&rs, root, home); err != nil {
		return 0, fmt.Errorf("%s: %v", file, err)
	}
	if err := CheckPrograms(rs.ProgramPins, programs, root, home); err != nil {
		return 0, err
	}
	var tools *toolpolicy.Policy
	if rs.Tools != "" {
		if tools, err = ReadTools(root, rs.Server, rs.Tools); err != nil {
			return 0, err
		}
		sayTools(say, rs.Server, tools)
	}
	if err := checkSources(&rs, root, home); err != nil {
		return 0, err
	}
	environ, err := WithEnvFile(os.Environ(), EnvFile{Path: envFile, Grants: append(append(append(append([]string{}, rs.Baseline...), rs.ReadOnly...), rs.ReadWrite...), root)}, rs.Env)
	if err != nil {
		return 0, err
	}
	log.Secrets(environ, rs.Env)
	log.Writable(rs.ReadWrite)
	opts := Options{Environ: environ, ProjectRoot: root, Home: home, Verbose: say, Log: log, Tools: tools}
	// Detached until its namespaces are gone: without them a daemon may
	// outlive the server, and the launcher cannot see it.
	rec, err := RecordSession(writereport.Session{Project: root, Server: rs.Server, Backend: artefact.RulesetBackend, Artefact: abs, Digest: digest,
		Detached: true, Writable: rs.ReadWrite}, os.Getenv, opts.Verbose, os.Stderr)
	if err != nil {
		return 0, err
	}
	opts.Contained = rec.End
	return Start(&rs, opts)
}
