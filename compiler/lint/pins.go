package lint

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/hostfile"
)

// An entry mcpolicy wrote starts only what build wrote: mcpolicy-launch
// with --sha256 DIGEST ARTEFACT, mcpolicy run with --sha256 DIGEST PLAN.
// Lint reads such an entry as confined ("mcpolicy" in its summary) and,
// where the config is this machine's, holds the digest against the file.

// pinnedEntry is a pinned example: an entry of launcher args whose
// artefact, .mcpolicy/landlock/s.json, holds body; digestOf is the bytes
// the entry's digest is of.
func pinnedEntry(body, digestOf string) Example {
	sum := sha256.Sum256([]byte(digestOf))
	return withFiles(Example{Kind: "client", Text: `{"mcpServers": {"s": {"command": "mcpolicy-launch", "args": ["--project-root-env", "CLAUDE_PROJECT_DIR", "--sha256", "sha256:` +
		hex.EncodeToString(sum[:]) + `", "./.mcpolicy/landlock/s.json"]}}}`}, ".mcpolicy/landlock/s.json", body)
}

func pinRule() *Rule {
	const ruleset = `{"backend": "landlock", "server": "s", "plan": "sha256:00", "command": ["/bin/true"]}` + "\n"
	return &Rule{
		ID: "PINNED_DIGEST", Name: "pinned-digest", Severity: Error,
		Purpose:     "An entry mcpolicy wrote (mcpolicy-launch, or mcpolicy run, with --sha256 DIGEST FILE) pins an artefact or plan file that is missing on this machine, or whose bytes have another digest.",
		Rationale:   "The launcher starts only the bytes the entry pins: a changed file (the policy rebuilt since the entry was written, or the artefact edited) or a missing one is refused at spawn (exit 8, or 1), and the client shows only that the server closed. Checked where the config is this machine's (a project's own file, --this-machine).",
		Remediation: "Run `mcpolicy build`, then `mcpolicy client TARGET --write`, and review the diff; `mcpolicy check` says whether the file was edited after the build (TAMPERED).",
		Bad:         pinnedEntry(ruleset, "another ruleset\n"),
		Good:        pinnedEntry(ruleset, ruleset),
		check:       checkPinned,
	}
}

// checkPinned holds a pinned entry's digest against its file.
func checkPinned(t *readback.Target, _ Options, report reportFn) {
	if t.Artefact == "" || t.Digest == "" || !t.OnThisMachine {
		return
	}
	b, err := hostfile.ReadRegular(t.Artefact, hostfile.MaxArtefact)
	if err != nil {
		report(t.Pos, "the entry pins %s, which cannot be read here (%v): the launcher will refuse to start it; run `mcpolicy build`, then `mcpolicy client TARGET --write`", t.Artefact, err)
		return
	}
	got := artefact.Digest(b)
	if got == t.Digest || got == "sha256:"+t.Digest {
		return
	}
	report(t.Pos, "the entry pins %s at %s, but the file is %s: it changed after the entry was written (a rebuilt policy, or an edit), and the launcher refuses it (exit 8); run `mcpolicy build`, then `mcpolicy client TARGET --write`, and review the diff", t.Artefact, t.Digest, got)
}
