package project

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpolicy/mcpolicy/clientcfg"
	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/lint"
	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/schema"
)

// LintOptions say what `mcpolicy lint` reads.
type LintOptions struct {
	// Project and Plans are the policies' (nil: client configs and
	// manifests only). A client config in the project is this machine's.
	Project *Project
	Plans   []*compiler.Plan
	// Clients are client configs, Manifests hand-written Kubernetes
	// manifests (a Pod, or a workload's Pod template).
	Clients, Manifests []string
	// Discover is a folder whose project-scope client configs are read
	// too (clientcfg.Discover, --discover); "" for none. One that resolves
	// (a symlink, or in a symlinked folder) outside the folder is not read.
	Discover string
	// Home places ~; ThisMachine says every client config's paths are
	// this machine's (granted folders are looked into, env files read).
	Home        string
	ThisMachine bool
}

// LintInput is what lint reads: the targets, the PARSE notes of the
// client configs and manifests, and the positions of those (or of the
// entries in them) that could not be read.
type LintInput struct {
	Targets []*readback.Target
	Notes   []lint.Note
	Unread  []string
}

// ReadLint gathers lint's targets: the policies' servers, each client
// config's entries, each manifest's containers. Client configs are read
// tolerantly: each repair is a PARSE note; one that cannot be read (or an
// entry in it) is a PARSE error at its position, and the next is read.
func ReadLint(o LintOptions) *LintInput {
	in := &LintInput{}
	projectRoot := ""
	if o.Project != nil {
		projectRoot = o.Project.Root
		ts := lint.PolicyTargets(o.Plans, o.Project.Root, o.Home)
		MarkUnbuildable(ts) // a policy that does not build is not clean
		in.Targets = append(in.Targets, ts...)
	}
	co := clientcfg.Options{Home: o.Home, ThisMachine: o.ThisMachine, Project: projectRoot}
	clients, discovered := o.Clients, map[string]bool{}
	if o.Discover != "" {
		for _, c := range clientcfg.Discover(o.Discover) {
			clients = append(clients, c)
			discovered[c] = true
		}
	}
	for _, c := range clients {
		var ts []*readback.Target
		var ns []lint.Note
		var err error
		if discovered[c] {
			err = outOfProject(c, o.Discover)
		}
		if err == nil {
			ts, ns, err = clientcfg.ReadLint(c, co)
		}
		if err != nil { // what was noted before it, then why the file is not linted
			ns = append(ns, unreadLintNote(c, err))
		}
		for _, n := range ns {
			if n.Unread {
				in.Unread = append(in.Unread, n.Pos.String())
			}
		}
		in.Notes = append(in.Notes, ns...)
		in.Targets = append(in.Targets, ts...)
	}
	for _, m := range o.Manifests {
		ts, err := readManifest(m)
		if err != nil {
			n := unreadLintNote(m, err)
			in.Unread = append(in.Unread, n.Pos.String())
			in.Notes = append(in.Notes, n)
		}
		in.Targets = append(in.Targets, ts...)
	}
	return in
}

// outOfProject refuses a discovered client config that resolves outside
// the folder it was found in: a committed symlink (.vscode/mcp.json ->
// /etc/shadow) would otherwise have lint read, and quote, a file of the
// machine running it.
func outOfProject(file, dir string) error {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	if root, err = filepath.Abs(root); err != nil {
		return err
	}
	real, err := filepath.EvalSymlinks(file)
	if err != nil {
		return err
	}
	if real, err = filepath.Abs(real); err != nil {
		return err
	}
	if rel, err := filepath.Rel(root, real); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return &schema.Error{Pos: schema.Pos{File: file, Line: 1, Col: 1}, Msg: "a symlink out of the project: not read" +
			"; hint: a client config --discover finds is read only when it lives in the project; name a file outside it with --client"}
	}
	return nil
}

// readManifest is a manifest's containers, each a target; a manifest
// with none is an error.
func readManifest(file string) ([]*readback.Target, error) {
	src, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	ts, err := clientcfg.ReadManifest(file, src)
	if err == nil && len(ts) == 0 {
		err = fmt.Errorf("no Pod, nor a workload with a Pod template")
	}
	return ts, err
}

// unreadLintNote is UnreadNote as a lint note.
func unreadLintNote(file string, err error) lint.Note {
	pos, msg := UnreadNote(file, err, "linted")
	return lint.Note{Pos: pos, Msg: msg, Unread: true}
}
