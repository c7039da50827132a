package lint

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/readback"
)

// RunsNext are what a home folder holds that the user's next shell, login
// or ordinary command runs, loads, or reads for what to run, relative to
// it. A grant that is, lies in or holds one of them hands the server code
// that runs outside the sandbox. The order is the order findings name them.
var RunsNext = []string{
	// Shell start-up and exit files, and what the usual ones source
	// (Debian's .bashrc sources .bash_aliases, Fedora's .bashrc.d/*,
	// .zshrc oh-my-zsh.sh and its plugins).
	".bashrc", ".bash_profile", ".bash_login", ".profile", ".bash_logout", ".bash_aliases", ".bashrc.d",
	".zshrc", ".zshenv", ".zprofile", ".zlogin", ".zlogout", ".oh-my-zsh", ".config/fish", ".config/powershell",
	// Graphical login: display managers source .xprofile, startx runs
	// .xinitrc, Plasma sources plasma-workspace/env/*.sh; autostart and
	// desktop entries (one named like a system app's replaces it), user
	// services and their environment.
	".xprofile", ".xinitrc", ".xsession", ".config/plasma-workspace", ".config/autostart", ".local/share/applications",
	".config/systemd/user", ".config/environment.d", "Library/LaunchAgents",
	"AppData/Roaming/Microsoft/Windows/Start Menu/Programs/Startup",
	// Installed commands, on PATH (and for ~/.gem, user-installed gems:
	// libraries ruby loads, plugins every gem command runs).
	".local/bin", "bin", "go/bin", ".deno/bin", ".bun/bin", ".npm-global", ".local/share/pnpm", ".dotnet/tools", ".gem",
	// Toolchains and version managers: their shims on PATH, the compilers
	// and interpreters they run, the scripts the shell sources (nvm.sh,
	// sdkman-init.sh, cargo's env); cargo's config names a runner and a
	// rustc wrapper, and its registry sources' build.rs run on a build.
	".cargo", ".rustup", ".nvm", ".pyenv", ".asdf", ".volta", ".sdkman", ".local/share/mise", ".config/mise",
	// What the next build or interpreter start loads without checking:
	// Go's module and build caches (linked into the next build), Gradle's
	// home (init.d scripts run on every build), Maven's repository and
	// .mavenrc (sourced by mvn), Python's user site-packages (macOS's in
	// ~/Library/Python: usercustomize.py and .pth files run at every
	// start), pre-commit's
	// hook repositories (run on every commit).
	"go/pkg/mod", ".cache/go-build", "Library/Caches/go-build", ".gradle", ".m2", ".mavenrc",
	".local/lib", "Library/Python", ".cache/pre-commit",
	// git's global config: core.fsmonitor, core.pager, aliases run on
	// every git command.
	".gitconfig", ".config/git",
	// Editors and terminals: configs and plugins run when they start,
	// extensions run in the editor's host, tasks and terminal profiles.
	".vimrc", ".vim", ".config/nvim", ".local/share/nvim", ".emacs", ".emacs.d", ".config/emacs", ".tmux.conf", ".config/tmux",
	".vscode", ".vscode-server", ".config/Code", "Library/Application Support/Code", "AppData/Roaming/Code",
	".cursor", ".config/Cursor", "Library/Application Support/Cursor",
	// MCP clients' user configs: the servers they list, the client starts
	// unconfined (and Claude Code's hooks run on its next tool call).
	".claude.json", ".claude", ".config/Claude", "Library/Application Support/Claude", "AppData/Roaming/Claude",
	".codex", ".gemini", ".qwen", ".kiro", ".config/zed", ".continue", ".codeium/windsurf",
	".config/opencode", ".config/crush", ".config/goose",
}

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
		Purpose:     "A read-write grant is, lies in or holds what the user's next shell, login or ordinary command runs or loads: shell start-up files (~/.bashrc, ~/.zshrc, ~/.oh-my-zsh...), folders of installed commands (~/.local/bin, ~/go/bin), toolchains and version managers (~/.cargo, ~/.rustup, ~/.nvm, ~/.pyenv), caches and packages the next build or interpreter loads (~/go/pkg/mod, ~/.cache/go-build, ~/.gradle, ~/.m2, ~/.local/lib), git's global config, editors' configs and extensions (~/.vim, ~/.config/nvim, ~/.vscode), MCP clients' user configs (~/.claude.json, ~/Library/Application Support/Claude, ~/.cursor), autostart and desktop entries, user services (~/.config/systemd/user, ~/Library/LaunchAgents) — or the folder holding the mcpolicy launcher that client entries run (on this machine).",
		Rationale:   "Whatever the server writes there runs outside the sandbox, as the user, the next time a terminal opens, the session starts, or git, a build, an interpreter, an editor or an installed command runs; a server an MCP client's config gains is started unconfined by the client, and a launcher the server rewrites starts every other server of every project unconfined. The grant outlives the sandbox it was given in.",
		Remediation: "Grant the narrower folder the server works in (~/.local/share/APP), read-only where it only reads; a server that installs tools or builds installs them, and keeps its caches, in folders of the project (GOMODCACHE, GOCACHE, CARGO_HOME, GRADLE_USER_HOME pointed there). Install mcpolicy where no server has a write grant.",
		Bad:         withFiles(policy(`image: "x:1"`+"\nmounts: [{source: \"~/.local/bin\", target: \"/out\", mode: \"rw\"}]"), "~/.local/bin/tool", "#!/bin/sh"),
		Good:        withFiles(policy(`image: "x:1"`+"\nmounts: [{source: \"~/.local/share/app\", target: \"/data\", mode: \"rw\"}]"), "~/.local/share/app/db", ""),
		check:       checkRunsNext,
	}
}

func checkRunsNext(t *readback.Target, o Options, report reportFn) {
	for _, m := range mounts(t) {
		if m.Mode != compiler.ReadWrite {
			continue
		}
		f := hostFacts(t, m.Source)
		if f.HoldsHomes || f.IsHome() || f.Root { // MOUNT_HOME, MOUNT_PARENT, MOUNT_ROOT
			continue
		}
		hit := f.RunsNext()
		if len(hit) > 6 { // a broad folder (~/.config) holds many: name a few
			hit = append(hit[:6:6], fmt.Sprintf("and %d more", len(hit)-6))
		}
		if dir, ok := onMachine(t, m.Host); ok {
			hit = append(hit, launchersIn(o.fs, dir)...)
		}
		if len(hit) > 0 {
			report(m.Pos, "read-write mount %s covers what runs next outside the sandbox: %s", m.Source, strings.Join(hit, ", "))
		}
	}
}

// launchersIn lists the mcpolicy binaries of this machine (the one
// running, and mcpolicy-launch as PATH finds it) that lie in dir, both
// resolved.
func launchersIn(c *fsCache, dir string) []string {
	real, err := c.evalSymlinks(dir)
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
