// Package protect is the one list of protected names: the entries of a
// read-write mount that stay read-only (and cannot be moved, replaced or
// created) unless a policy unprotects them, because what is written there
// decides what runs next, outside the sandbox. The compiler, every backend,
// the launcher, lint and the docs all read this list; the schema's
// #ProtectedName is kept equal to it by a test.
//
// Every name is one path component, matched at the top of a mount: a
// protected entry is protected as a whole (a directory with everything
// below it), so renaming its parent or a file inside it is not a way
// around it.
//
// This package imports nothing: the small launcher links it.
package protect

import "strings"

// Name is one protected entry.
type Name struct {
	// Pattern is a file name, or a prefix followed by "*".
	Pattern string
	// Reason says what a server could do by writing it.
	Reason string
}

// Names is the list, in the order the docs show it.
var Names = []Name{
	{".git", "git reads its config (core.fsmonitor, core.hooksPath, filters, a push remote) and runs hooks on the user's next git command; submodule and worktree git dirs live below it, and a .git file can point anywhere"},
	{".hg", "Mercurial's repository: hooks, aliases and extensions in .hg/hgrc run on the user's next hg command"},
	{".sl", "Sapling's repository: hooks in .sl/config run on the user's next sl command"},
	{".jj", "Jujutsu's repository: its config (in older jj) names a pager, diff and fix tools, and its store the git dir jj's git commands use"},
	{".mcpolicy", "mcpolicy's own artefacts: what the next launch of every server runs"},
	{"mcpolicy.*", "the policies: the confinement itself"},
	{"mcpolicy.d", "the policies: the confinement itself"},
	{".mcp.json", "Claude Code's project MCP servers: commands a client spawns"},
	{".claude", "Claude Code's project settings: hooks run shell commands"},
	{".vscode", "VS Code's MCP servers, tasks and settings: commands the editor runs"},
	{".cursor", "Cursor's MCP servers and rules"},
	{".zed", "Zed's settings and context servers"},
	{".gemini", "Gemini CLI's settings and MCP servers"},
	{".codex", "Codex's config and MCP servers"},
	{".windsurf", "Windsurf's workspace rules and settings"},
	{".roo", "Roo Code's MCP servers and rules"},
	{".kilocode", "Kilo Code's MCP servers and rules"},
	{".continue", "Continue's MCP servers and config"},
	{".kiro", "Kiro's MCP servers, hooks and steering"},
	{".opencode", "opencode's config and agents"},
	{"opencode.json", "opencode's MCP servers"},
	{".crush.json", "Crush's MCP servers"},
	{"crush.json", "Crush's MCP servers"},
	{".qwen", "Qwen Code's settings and MCP servers"},
	{".amazonq", "Amazon Q's MCP servers"},
	{".clinerules", "Cline's rules and workflows"},
	{".junie", "Junie's guidelines and MCP servers"},
	{".idea", "JetBrains run configurations and settings"},
	{".devcontainer", "dev container definitions: commands run when the folder is opened"},
	{".husky", "git hooks when core.hooksPath points here"},
	{".githooks", "git hooks when core.hooksPath points here"},
	{".cargo", "cargo's config: a runner or rustc wrapper runs on the next cargo run or build"},
	{"rust-toolchain.toml", "rustup's toolchain file: a path runs the writer's cargo and rustc on every cargo command"},
	{"rust-toolchain", "rustup's older toolchain file: the same path setting"},
	{".npmrc", "npm's config: script-shell runs every npm script"},
	{".yarnrc.yml", "yarn's config: yarnPath is executed by every yarn command"},
	{".yarnrc", "yarn 1's config: yarn-path is executed by every yarn command"},
	{".pnpmfile.cjs", "pnpm's hooks: code run by every pnpm install"},
	{".pnpmfile.mjs", "pnpm's hooks: code run by every pnpm install"},
	{"bunfig.toml", "bun's config: preload scripts run before every bun run and bun test"},
	{".mvn", "Maven's project config: jvm.config (a -javaagent), maven.config and extensions.xml apply to every mvn command, and mvnw's download URL"},
	{"gradle.properties", "Gradle's properties: org.gradle.jvmargs (a -javaagent) and org.gradle.java.home run on every Gradle build"},
	{".jvmopts", "sbt's JVM options: a -javaagent runs on every sbt command"},
	{".sbtopts", "sbt's options: a -J-javaagent runs on every sbt command"},
	{".mill-jvm-opts", "Mill's JVM options: a -javaagent runs in Mill's daemon on every mill command"},
	{".bazelrc", "Bazel's options: --host_jvm_args, --workspace_status_command and --run_under run commands on the next bazel command"},
	{".bazeliskrc", "Bazelisk's settings: BAZELISK_BASE_URL downloads the bazel every bazel command runs"},
	{".bazelversion", "the Bazel Bazelisk runs: a FORK/VERSION downloads the writer's bazel from GitHub"},
	{"global.json", ".NET's SDK selection: sdk.paths runs a project-local SDK on every dotnet command"},
	{"mise.*", "mise's configs and lockfiles (mise.toml, mise.local.toml, mise.dev.toml for MISE_ENV=dev, mise.lock...): tasks, hooks, and the download URLs of the tools it installs"},
	{".mise.*", "mise's configs and lockfiles (.mise.toml, .mise.local.toml, .mise.dev.toml...): the same"},
	{".miserc.toml", "mise's early settings: env = [\"dev\"] loads mise.dev.toml with no MISE_ENV set"},
	{".mise", "mise's tasks and hooks (.mise/config.toml)"},
	{"mise", "mise's tasks and hooks (mise/config.toml)"},
	{".config", "mise's tasks, hooks and early settings (.config/mise.toml, .config/miserc.toml, .config/mise/) and lefthook's git hook commands (.config/lefthook.yml)"},
	{".tool-versions", "asdf's and mise's tool versions: a path: version runs the writer's binaries as node, python, go..."},
	{".pre-commit-config.yaml", "pre-commit runs the hooks it names on every commit"},
	{"lefthook*", "lefthook's config (lefthook.yml, lefthook-local.yml...): commands its git hooks run on the next commit"},
	{".lefthook*", "lefthook's config and scripts (.lefthook.yml, .lefthook/...): commands its git hooks run on the next commit"},
	{".lintstagedrc*", "lint-staged's config (.lintstagedrc, .lintstagedrc.json, .lintstagedrc.js...): commands, or JavaScript, run by the git hook that calls lint-staged on the next commit"},
	{"lint-staged.config*", "lint-staged's JavaScript config (lint-staged.config.js, .mjs, .ts...): run by the git hook that calls lint-staged on the next commit"},
	{"eslint.config*", "ESLint's config (eslint.config.js, .mjs, .ts...): JavaScript run on every eslint and by the editor's ESLint extension when a file is opened"},
	{".eslintrc*", "ESLint's older config (.eslintrc.js, .eslintrc.json...): JavaScript, or a local extends, parser or plugin it loads, run on every eslint and by the editor when a file is opened"},
	{".prettierrc*", "Prettier's config (.prettierrc, .prettierrc.json, .prettierrc.js...): JavaScript, or the plugins it names (any import path), run on every prettier and on the editor's format on save"},
	{"prettier.config*", "Prettier's JavaScript config (prettier.config.js, .mjs, .ts...): run on every prettier and on the editor's format on save"},
	{"pylintrc", "pylint's config: init-hook is Python run on every pylint, and editors run pylint on open and save"},
	{".pylintrc", "pylint's config: the same init-hook"},
	{"pylintrc.toml", "pylint's config (3.1 on): the same init-hook"},
	{".pylintrc.toml", "pylint's config (3.1 on): the same init-hook"},
	{".tflint.hcl", "TFLint's config: plugin blocks and plugin_dir choose the plugin binaries every tflint runs"},
	{".tflint.json", "TFLint's config in JSON: the same plugin settings"},
	{".tflint.d", "TFLint's project plugins: an enabled plugin's binary in .tflint.d/plugins runs on every tflint"},
	{".pdbrc", "pdb's rc file: Python run whenever pdb starts here (python -m pdb, breakpoint(), pytest --pdb)"},
	{".irbrc", "IRB's rc file: Ruby run on every irb and rails console started here (by older IRB when there is no ~/.irbrc)"},
	{"irbrc", "IRB's rc file under a name newer IRB also reads: the same Ruby"},
	{"irb.rc", "IRB's rc file under a name older IRB also reads: the same Ruby"},
	{"_irbrc", "IRB's rc file under another name it reads: the same Ruby"},
	{"$irbrc", "IRB's rc file under another name it reads: the same Ruby"},
	{".pryrc", "Pry's rc file: Ruby run on every pry and binding.pry started here"},
	{"__pycache__", "Python's bytecode cache, git-ignored: a .pyc whose header copies its source's mtime and size runs in place of the source on the next import (python, pytest, the editor's language server)"},
	{".venv", "a Python virtual environment, git-ignored: a .pth file in its site-packages runs at every start of its interpreter (pip, pytest, the editor's language server), and its bin/ holds the python and scripts the user runs"},
	{"venv", "a Python virtual environment under its other usual name: the same"},
	{".direnv", "direnv's layouts (layout python makes its virtual environment in .direnv/python-X): activated on cd, the same .pth files and bin/"},
	{".tox", "tox's environments: their interpreters, site-packages and .pth files run on every tox run"},
	{".nox", "nox's environments: the same on every nox run"},
	{"node_modules", "npm's installed packages, git-ignored: code every require of them runs, and the bin/ scripts npm scripts and npx run"},
	{"target", "cargo's and Maven's build output, git-ignored: the binaries the user starts from it, cargo run (its fingerprints, in target/ too, say they are fresh), the classes mvn exec and tests run"},
	{"build", "build output, git-ignored: CMake's build tree (the Makefiles cmake --build runs), Gradle's and setuptools' classes and libraries, a web bundle: what the host runs next"},
	{"dist", "distribution output, git-ignored: the JavaScript a package.json main or bin runs, the wheels and archives a release or twine upload publishes"},
	{".envrc", "direnv runs it on cd"},
	{".env*", "secrets, and variables tools load"},
}

// Patterns returns every pattern, in the list's order.
func Patterns() []string {
	out := make([]string, len(Names))
	for i, n := range Names {
		out[i] = n.Pattern
	}
	return out
}

// Match returns the pattern a top-level entry name matches, or "".
func Match(name string) string {
	for _, n := range Names {
		if n.Matches(name) {
			return n.Pattern
		}
	}
	return ""
}

// Matches reports whether a top-level entry name is protected by n.
func (n Name) Matches(name string) bool {
	if prefix, ok := strings.CutSuffix(n.Pattern, "*"); ok {
		return strings.HasPrefix(name, prefix)
	}
	return name == n.Pattern
}

// Known reports whether pattern is one of the list's patterns (what a
// policy may unprotect).
func Known(pattern string) bool {
	for _, n := range Names {
		if n.Pattern == pattern {
			return true
		}
	}
	return false
}

// Except returns the first pattern matching a top-level entry name that is
// not in unprotected, or "": an entry matching two patterns (mcpolicy.d
// matches "mcpolicy.*" and "mcpolicy.d") stays protected until both are
// unprotected.
func Except(name string, unprotected []string) string {
	for _, n := range Names {
		if n.Matches(name) && !contains(unprotected, n.Pattern) {
			return n.Pattern
		}
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
