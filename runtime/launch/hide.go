package launch

import (
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
)

// A hidden path (mounts[].hide) is expanded at spawn against the mount's
// host source, and each match is masked after every other mount: a folder
// by an empty read-only tmpfs of mode 0000, a file by an empty read-only
// file of mode 0000. The entry stays, so the server gets EACCES (one notch
// weaker than a path outside every mount, which is ENOENT).

// HideOp is the launcher-only operation of a bwrap spec that hides paths
// below a mount: "--mcpolicy-hide SOURCE TARGET PATTERN". bwrap has no such
// option: a launcher that does not know it refuses the spec.
const HideOp = artefact.BwrapHideOp

// Bounds on a pattern's expansion: each match is a mount (and, under
// bwrap, a descriptor).
const (
	maxHideEntries = 65536 // names read from a pattern's folder
	maxHideMatches = 256   // masks per mount
)

// hideMatch is one entry a hidden pattern matched at spawn.
type hideMatch struct {
	rel string // below the mount's source, slash-separated
	dir bool   // a folder (masked by a tmpfs), else a file
}

// hiddenMatches expands a mount's patterns below source: each match once,
// sorted.
func (s *Sources) hiddenMatches(source string, patterns []string) ([]hideMatch, error) {
	seen := map[string]bool{}
	var out []hideMatch
	for _, pat := range patterns {
		if pat == "" || pat == "." || path.Clean(pat) != pat || path.IsAbs(pat) || pat == ".." || len(pat) > 2 && pat[:3] == "../" {
			return nil, fmt.Errorf("hidden path %q: not a clean path below the mount", pat)
		}
		ms, err := s.expandHidden(source, pat)
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			if !seen[m.rel] {
				seen[m.rel] = true
				out = append(out, m)
			}
		}
		if len(out) > maxHideMatches {
			return nil, fmt.Errorf("the hidden paths of %s match more than %d entries: hide the folder that holds them instead", source, maxHideMatches)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].rel < out[j].rel })
	return out, nil
}

// hide expands one "--mcpolicy-hide SOURCE TARGET PATTERN" of a bwrap spec
// and masks each match: a folder by an empty tmpfs of mode 0000, remounted
// read-only; a file by an empty file of mode 0000, bound read-only (an
// empty memfd bwrap reads). The spec puts these after every other mount.
func (p *bwrapPrep) hide(v []string) error {
	host, target, err := p.sourceTarget(v)
	if err != nil {
		return err
	}
	ms, err := p.src.hiddenMatches(host, v[2:3])
	if err != nil {
		return err
	}
	for _, m := range ms {
		t := path.Join(target, m.rel)
		if m.dir {
			p.b.Argv = append(p.b.Argv, "--perms", "0000", "--tmpfs", t, "--remount-ro", t)
			continue
		}
		fd, err := memfd("mcpolicy-hidden", nil)
		if err != nil {
			return err
		}
		p.b.FDs = append(p.b.FDs, fd)
		p.b.Argv = append(p.b.Argv, "--perms", "0000", "--ro-bind-data", strconv.Itoa(fd), t)
	}
	return nil
}

// hide expands one EngineHideFlag and masks each match with a read-only
// bind of the launcher's own empty mode-0000 folder or file (maskSources),
// each recorded for the verifier. A mount already at a match's target (a
// fixed top level's entry, a protected path) is dropped: engines refuse
// two mounts at one path, and the mask must win.
func (p *enginePrep) hide(v string) error {
	h, err := artefact.ParseEngineHide(v)
	if err != nil {
		return err
	}
	ms, err := p.src.hiddenMatches(h.Source, []string{h.Pattern})
	if err != nil || len(ms) == 0 {
		return err
	}
	dir, file, err := maskSources()
	if err != nil {
		return err
	}
	for _, m := range ms {
		t := path.Join(h.Target, m.rel)
		p.dropMount(t)
		src := file
		if m.dir {
			src = dir
		}
		fd, err := openMask(src, m.dir)
		if err != nil {
			return err
		}
		if err := p.opened(fd, t); err != nil {
			return err
		}
		v := (&artefact.Mount{Kind: "bind", Source: src, Target: t, ReadOnly: true}).String()
		// The engines read --mount as CSV, which turns a quoted "\r\n"
		// into "\n": the mask would land at another name.
		if back, err := artefact.ParseMount(v); err != nil || back.Target != t {
			return tampered("%s matches the hidden path %q, and the engine would read its name as another: refusing to start; rename it: `ls -b %s`", path.Join(h.Source, m.rel), h.Pattern, path.Join(h.Source, path.Dir(m.rel)))
		}
		p.out = append(p.out, "--mount", v)
	}
	return nil
}

// dropMount removes a --mount at target from the argv built so far, and
// its expectation.
func (p *enginePrep) dropMount(target string) {
	for i := 0; i+1 < len(p.out); i++ {
		if p.out[i] != "--mount" {
			continue
		}
		if m, err := artefact.ParseMount(p.out[i+1]); err == nil && path.Clean(m.Target) == target {
			p.out = append(p.out[:i:i], p.out[i+2:]...)
			i--
		}
	}
	for i := 0; i < len(p.expect); i++ {
		if eq := strings.LastIndex(p.expect[i], "="); eq >= 0 && p.expect[i][:eq] == target {
			p.expect = append(p.expect[:i:i], p.expect[i+1:]...)
			i--
		}
	}
}
