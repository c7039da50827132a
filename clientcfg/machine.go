package clientcfg

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/emit/registry"
	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/hostfile"
)

// Options say for whose machine a client config is read.
type Options struct {
	// Home is the home folder of the user reading (os.UserHomeDir). It
	// places the config's ~ and $HOME only when the config is this
	// machine's; it also tells a user config (~/.cursor/mcp.json) from a
	// project one.
	Home string
	// ThisMachine: the user says the config's paths are this machine's
	// (lint --this-machine).
	ThisMachine bool
	// Project is the folder of the project being linted, "" when none: a
	// config inside it is this machine's.
	Project string
}

// OnThisMachine reports whether the paths a client config names are known
// to be this machine's: the user says so, the config lies in the project
// being linted, or it is a project-scope config (.mcp.json,
// .vscode/mcp.json...) whose project folder, the one holding it, exists
// here. A user config (claude_desktop_config.json, mcp.json, a file taken
// from a README or another machine) may be anyone's: it is judged as
// written, and nothing it names is read here.
func OnThisMachine(file string, o Options) bool {
	if o.ThisMachine {
		return true
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return false
	}
	if o.Project != "" {
		if p, err := filepath.Abs(o.Project); err == nil {
			if rel, err := filepath.Rel(p, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				return true
			}
		}
	}
	if dir := projectOf(abs, o.Home); dir != "" {
		fi, err := os.Stat(filepath.FromSlash(dir))
		return err == nil && fi.IsDir()
	}
	return false
}

// ReadFor reads a client config as Read does, for the machine o says: on
// this machine (OnThisMachine), paths under o.Home are relative to HOME and
// the files entries name (env files, sandbox profiles) are read; otherwise
// home and project folders are kept as written (~, ${workspaceFolder}), no
// file is opened but the config, and the targets say so (OnThisMachine
// false), for the rules to judge every path lexically.
func ReadFor(file string, o Options) ([]*readback.Target, error) {
	src, err := hostfile.ReadRegular(file, hostfile.MaxConfig)
	if err != nil {
		return nil, err
	}
	local := OnThisMachine(file, o)
	ts, err := parse(file, src, o.Home, local)
	for _, t := range ts {
		t.OnThisMachine = local && !inCluster(t.Launcher)
	}
	return ts, err
}

// inCluster reports whether the backend a target starts runs in a cluster
// (a manifest's): its host paths are a node's, not this machine's.
func inCluster(launcher string) bool {
	b, err := registry.Lookup(launcher)
	return err == nil && b.Runtime().Sandbox == artefact.Cluster
}
