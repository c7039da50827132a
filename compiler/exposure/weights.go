package exposure

import (
	_ "embed"
	"fmt"
	"github.com/mcpolicy/mcpolicy/internal/baseline"
	"sync"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/internal/protect"
)

//go:embed weights.cue
var weightsSource []byte

// WeightsFile is the name the embedded data carries in messages.
const WeightsFile = "compiler/exposure/weights.cue"

// Weight is one reviewed weight: how much a grant of a kind, and of one
// refinement within it, adds to a server's exposure, and why.
type Weight struct {
	Kind       compiler.GrantKind
	Refinement string
	Weight     int
	Reason     string
}

// Match holds the lexical rules the data gives for refinements.
type Match struct {
	SecretEnv struct {
		Contains   []string `json:"contains"`
		Words      []string `json:"words"`
		Attributes []string `json:"attributes"`
		Counters   []string `json:"counters"`
	} `json:"secretEnv"`
	SecretFiles    []string `json:"secretFiles"`
	NotSecretFiles []string `json:"notSecretFiles"`
}

// Table is the loaded data: the weights in the file's order, and the
// matching rules.
type Table struct {
	Weights []Weight
	Match   Match
	Unknown Weight // for a grant kind or a degradation the data does not name

	index map[compiler.GrantKind]map[string]Weight
}

// Lookup returns the weight of kind's refinement.
func (t *Table) Lookup(kind compiler.GrantKind, refinement string) (Weight, bool) {
	w, ok := t.index[kind][refinement]
	return w, ok
}

// Refinements of each kind the score produces, besides the open ones
// (unprotect by protected name, accepted by degradation name). The data
// must give each a weight, and no other.
var (
	mountClasses = []string{classRoot, classHomes, classHome, classCredentials, classSecretFile, classInHome,
		classElsewhere, classProject, classInProject}
	fixedRefinements = map[compiler.GrantKind][]string{
		compiler.GrantMountRO:    mountClasses,
		compiler.GrantMountRW:    mountClasses,
		compiler.GrantScratch:    {"bounded"},
		compiler.GrantEnv:        {envSecret, envPlain},
		compiler.GrantSetEnv:     {"constant"},
		compiler.GrantPack:       baseline.PackNames(),
		compiler.GrantEgress:     {egressHost, egressAddress, egressPrivate, egressWildcard},
		compiler.GrantRootUser:   {"uid0"},
		compiler.GrantInvoker:    {"invoker"},
		compiler.GrantTool:       {toolName, toolGlob, toolAll},
		compiler.GrantToolArg:    {"constraint"},
		compiler.GrantCredential: {"bound"},
	}
)

// unprotectOther is the unprotect refinement for a name the data does not
// weigh on its own.
const unprotectOther = "other"

var (
	loadOnce sync.Once
	loaded   *Table
	loadErr  error
)

// Weights returns the embedded table, loaded and checked once. The data is
// part of the binary and its tests load it: an error here is a bug.
func Weights() *Table {
	loadOnce.Do(func() { loaded, loadErr = Load(weightsSource) })
	if loadErr != nil {
		panic("internal error: " + loadErr.Error())
	}
	return loaded
}

// Load reads and checks weights data in the form of weights.cue: its
// schema (closed: an unknown field is an error) and the rules the score
// needs (every refinement weighed, none unknown).
func Load(src []byte) (*Table, error) {
	v := cuecontext.New().CompileBytes(src, cue.Filename(WeightsFile))
	if err := v.Validate(cue.Concrete(true)); err != nil {
		return nil, fmt.Errorf("%s: %v", WeightsFile, err)
	}
	t := &Table{index: map[compiler.GrantKind]map[string]Weight{}}
	if err := v.LookupPath(cue.ParsePath("match")).Decode(&t.Match); err != nil {
		return nil, fmt.Errorf("%s: match: %v", WeightsFile, err)
	}
	ws := v.LookupPath(cue.ParsePath("weights"))
	kinds, err := ws.Fields()
	if err != nil {
		return nil, fmt.Errorf("%s: weights: %v", WeightsFile, err)
	}
	for kinds.Next() {
		kind := kinds.Selector().Unquoted()
		if kind == "unknown" {
			w, err := decodeWeight(kinds.Value())
			if err != nil {
				return nil, fmt.Errorf("%s: weights.unknown: %v", WeightsFile, err)
			}
			t.Unknown = Weight{Refinement: "unknown", Weight: w.Weight, Reason: w.Reason}
			continue
		}
		refs, err := kinds.Value().Fields()
		if err != nil {
			return nil, fmt.Errorf("%s: weights.%q: %v", WeightsFile, kind, err)
		}
		k := compiler.GrantKind(kind)
		t.index[k] = map[string]Weight{}
		for refs.Next() {
			w, err := decodeWeight(refs.Value())
			if err != nil {
				return nil, fmt.Errorf("%s: weights.%q.%q: %v", WeightsFile, kind, refs.Selector().Unquoted(), err)
			}
			w.Kind, w.Refinement = k, refs.Selector().Unquoted()
			t.Weights = append(t.Weights, w)
			t.index[k][w.Refinement] = w
		}
	}
	return t, t.check()
}

func decodeWeight(v cue.Value) (Weight, error) {
	var w struct {
		Weight int    `json:"weight"`
		Reason string `json:"reason"`
	}
	err := v.Decode(&w)
	return Weight{Weight: w.Weight, Reason: w.Reason}, err
}

// check: the refinements the score produces are exactly those weighed.
func (t *Table) check() error {
	if t.Unknown.Weight == 0 {
		return fmt.Errorf("%s: weights.unknown is missing", WeightsFile)
	}
	for k, refs := range fixedRefinements {
		for _, r := range refs {
			if _, ok := t.index[k][r]; !ok {
				return fmt.Errorf("%s: weights.%q.%q is missing", WeightsFile, k, r)
			}
		}
		for r := range t.index[k] {
			if !contains(refs, r) {
				return fmt.Errorf("%s: weights.%q.%q: no such refinement (want one of %q)", WeightsFile, k, r, refs)
			}
		}
	}
	for r := range t.index[compiler.GrantUnprotect] {
		if r != unprotectOther && !protect.Known(r) {
			return fmt.Errorf("%s: weights.%q.%q: not a protected name (package protect)", WeightsFile, compiler.GrantUnprotect, r)
		}
	}
	if _, ok := t.index[compiler.GrantUnprotect][unprotectOther]; !ok {
		return fmt.Errorf("%s: weights.%q.%q is missing", WeightsFile, compiler.GrantUnprotect, unprotectOther)
	}
	if _, ok := t.index[compiler.GrantDegrade]; !ok {
		return fmt.Errorf("%s: weights.%q is missing", WeightsFile, compiler.GrantDegrade)
	}
	for k := range t.index {
		if _, ok := fixedRefinements[k]; !ok && k != compiler.GrantUnprotect && k != compiler.GrantDegrade {
			return fmt.Errorf("%s: weights.%q: not a grant kind", WeightsFile, k)
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
