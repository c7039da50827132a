package launch

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/writereport"
)

// SessionRecord is a recorded launch; End marks its end where the
// launcher sees everything the server started gone (Landlock in
// namespaces). A nil record (nothing recorded) ends quietly.
type SessionRecord struct{ path string }

// RecordSession writes the session's record (writereport) before the
// server starts: the evidence a later `mcpolicy check` reads. With no
// HOME and no XDG_STATE_HOME nothing is recorded (said with verbose). A
// state folder inside a read-write grant refuses the launch: the server
// could rewrite its own evidence. A record that cannot be written (a
// read-only home) is said on stderr, and the server starts: the report
// is evidence on top of the confinement, not part of it. More unsettled
// sessions than writereport.Keep are said on stderr: none is pruned
// before a review.
func RecordSession(s writereport.Session, getenv func(string) string, verbose, stderr io.Writer) (*SessionRecord, error) {
	state := writereport.StateDir(getenv)
	if state == "" {
		if verbose != nil {
			fmt.Fprintln(verbose, "mcpolicy-launch: no HOME and no XDG_STATE_HOME: this session's writes are not recorded")
		}
		return nil, nil
	}
	p, err := writereport.Record(state, &s)
	var inside *writereport.InsideError
	switch {
	case errors.As(err, &inside):
		return nil, err
	case err != nil:
		fmt.Fprintf(stderr, "mcpolicy-launch: this session's writes are not recorded: %v (set XDG_STATE_HOME to a writable folder outside every grant)\n", err)
		return nil, nil
	}
	if verbose != nil {
		fmt.Fprintf(verbose, "mcpolicy-launch: session %s recorded in %s\n", s.ID, p)
	}
	if n := writereport.Backlog(state, s.Project); n > 0 {
		fmt.Fprintf(stderr, "mcpolicy-launch: %d sessions of %s await review in %s (more than the %d kept): none is pruned before `mcpolicy check` finds it settled or `mcpolicy sessions --accept` accepts it\n",
			n, s.Project, writereport.Dir(state, s.Project), writereport.Keep)
	}
	return &SessionRecord{path: p}, nil
}

// End records the end of the session.
func (r *SessionRecord) End() {
	if r != nil {
		writereport.MarkEnd(r.path, time.Now())
	}
}

// BwrapWritable are the host paths a bwrap artefact binds read-write.
func BwrapWritable(spec *artefact.BwrapSpec, root, home string) []string {
	var out []string
	for i := 0; i < len(spec.Args); i++ {
		a := spec.Args[i]
		if a == "--" {
			break
		}
		if a == "--bind" && i+1 < len(spec.Args) {
			out = append(out, expandRootHome(spec.Args[i+1], root, home))
		}
		n, _ := artefact.BwrapOperands(a)
		i += n
	}
	return out
}

// EngineWritable are the host paths docker/podman `run` arguments bind
// read-write.
func EngineWritable(args []string) []string {
	var out []string
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "--mount" {
			if m, err := artefact.ParseMount(args[i+1]); err == nil && !m.ReadOnly {
				out = append(out, m.Source)
			}
			i++
		}
	}
	return out
}

// EngineServer is the plan an engine launch runs (its org.mcpolicy.plan
// label), or "".
func EngineServer(args []string) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "--label" {
			if v, ok := strings.CutPrefix(args[i+1], "org.mcpolicy.plan="); ok {
				return v
			}
		}
	}
	return ""
}

func expandRootHome(p, root, home string) string {
	for ph, v := range map[string]string{"${PROJECT_ROOT}": root, "${HOME}": home} {
		if p == ph || strings.HasPrefix(p, ph+"/") {
			return v + strings.TrimPrefix(p, ph)
		}
	}
	return p
}
