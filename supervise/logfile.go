package supervise

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/egress"
	"github.com/mcpolicy/mcpolicy/launch"
)

// OpenLog opens the file `mcpolicy run --log` appends the egress proxy's
// decisions to. It is refused inside a folder the plan lets the server
// write: there the server could swap it for a symlink to a file the user's
// shell reads, or forge the denials that `mcpolicy suggest` turns into
// grants. egress.OpenLog refuses a symlink, a hard link or a FIFO where
// the log goes.
func OpenLog(path string, p *compiler.Plan, m compiler.Machine) (*os.File, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if g, in := launch.InsideAny(abs, p.WritableSources(m)); in {
		return nil, fmt.Errorf("decision log %s lies inside %s, which server %s may write: it could replace the log with a link to another file, or forge the denials `mcpolicy suggest` reads; keep the log outside every read-write grant (e.g. ~/.local/state/mcpolicy/%s.jsonl)", abs, g, p.Server, p.Server)
	}
	return egress.OpenLog(abs)
}
