package lint

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/mcpolicy/mcpolicy/compiler"
)

// RunsNext are what a home folder holds that the user's next shell, login
// or command runs, or reads for what to run, relative to it: shell start-up
// files, the folders tools install commands into (on PATH), git's global
// config (core.fsmonitor, core.pager, aliases run on every git command),
// autostart entries and user services.
var RunsNext = []string{".bashrc", ".bash_profile", ".bash_login", ".profile", ".zshrc", ".zshenv", ".zprofile", ".zlogin",
	".config/fish", ".local/bin", "bin", "go/bin", ".cargo/bin", ".deno/bin", ".bun/bin", ".gitconfig", ".config/git",
	".config/autostart", ".config/systemd/user", ".config/environment.d", "Library/LaunchAgents"}

// RunsNext lists what runs next (RunsNext, "~/.bashrc"...) that the path
// is, lies in, or holds. Purely lexical.
func (f PathFacts) RunsNext() []string {
	var hit []string
	if f.Home != "" {
		for _, r := range RunsNext {
			if relWithin(f.Sub, r) || relWithin(r, f.Sub) {
				hit = append(hit, "~/"+r)
			}
		}
	}
	return hit
}

// runsNextRule lives here, with the lists it reads; Registry sorts rules
// by ID, wherever they are declared.
func runsNextRule() *Rule {
	return &Rule{
		ID: "MOUNT_RUNS_NEXT", Name: "runs-next-mount", Severity: Error,
		Purpose:     "A read-write grant is, lies in or holds what the user's next shell, login or command runs: shell start-up files (~/.bashrc, ~/.profile, ~/.zshrc...), folders of installed commands (~/.local/bin, ~/bin, ~/go/bin, ~/.cargo/bin), git's global config, autostart entries and user services (~/.config/systemd/user, ~/Library/LaunchAgents) — or the folder holding the mcpolicy launcher that client entries run (on this machine).",
		Rationale:   "Whatever the server writes there runs outside the sandbox, as the user, the next time a terminal opens, the session starts, or git or an installed command runs; a launcher it rewrites starts every other server of every project unconfined. The grant outlives the sandbox it was given in.",
		Remediation: "Grant the narrower folder the server works in (~/.local/share/APP), read-only where it only reads; a server that installs tools installs them in a folder of the project. Install mcpolicy where no server has a write grant.",
		Bad:         withFiles(policy(`image: "x:1"`+"\nmounts: [{source: \"~/.local/bin\", target: \"/out\", mode: \"rw\"}]"), "~/.local/bin/tool", "#!/bin/sh"),
		Good:        withFiles(policy(`image: "x:1"`+"\nmounts: [{source: \"~/.local/share/app\", target: \"/data\", mode: \"rw\"}]"), "~/.local/share/app/db", ""),
		check:       checkRunsNext,
	}
}

func checkRunsNext(t *Target, o Options, report reportFn) {
	for _, m := range mounts(t) {
		if m.Mode != compiler.ReadWrite {
			continue
		}
		f := hostFacts(t, m.Source)
		if f.HoldsHomes || f.IsHome() || f.Root { // MOUNT_HOME, MOUNT_PARENT, MOUNT_ROOT
			continue
		}
		hit := f.RunsNext()
		if dir, ok := onMachine(t, m.Host); ok {
			hit = append(hit, launchersIn(dir)...)
		}
		if len(hit) > 0 {
			report(m.Pos, "read-write mount %s covers what runs next outside the sandbox: %s", m.Source, strings.Join(hit, ", "))
		}
	}
}

// launchersIn lists the mcpolicy binaries of this machine (the one
// running, and mcpolicy-launch as PATH finds it) that lie in dir, both
// resolved.
func launchersIn(dir string) []string {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil
	}
	var in []string
	for _, b := range ownBinaries() {
		if within(b, real) {
			in = append(in, b+" (mcpolicy's own)")
		}
	}
	return in
}

// ownBinaries are the running mcpolicy and the mcpolicy-launch PATH finds,
// resolved; looked up once per PATH (lint asks for every mount).
func ownBinaries() []string {
	path := os.Getenv("PATH")
	ownMu.Lock()
	defer ownMu.Unlock()
	if bins, ok := ownCache[path]; ok {
		return bins
	}
	var bins []string
	if self, err := os.Executable(); err == nil {
		bins = append(bins, self)
	}
	if l, err := exec.LookPath("mcpolicy-launch"); err == nil {
		bins = append(bins, l)
	}
	var real []string
	for _, b := range bins {
		if r, err := filepath.EvalSymlinks(b); err == nil {
			real = append(real, r)
		}
	}
	ownCache[path] = real
	return real
}

var (
	ownMu    sync.Mutex
	ownCache = map[string][]string{}
)
