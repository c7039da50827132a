package prove

import (
	"context"
	"os/exec"
	"strings"
	"time"

	"github.com/mcpolicy/mcpolicy/runtime/probe"
)

// imageTools is what the reproduce commands of an engine run in: the
// server's own image, with its own cat, ls and sh where it has them, else
// the static probe prove ran (this mcpolicy: `mcpolicy probe`) bound in
// read-only. Either way the line needs the engine alone: no stand-in
// image, no mcpolicy installed.
type imageTools struct {
	standIn string          // the stand-in image's tag (mcpolicy run's lines)
	image   string          // the server's image
	has     map[string]bool // the tools found in it, run as its confinement runs them
	probe   string          // the static probe's host path
	// kept: the server's image is not on this machine and the stand-in
	// is kept (--keep-image): the line runs the stand-in, which is.
	kept bool
}

// toolOf is the ordinary command that makes op on target.
func toolOf(op probe.Op, target string) []string {
	return map[probe.Op][]string{
		probe.Read: {"cat", target}, probe.List: {"ls", target}, probe.Write: {"sh", "-c", ": >> \"$0\"", target},
		probe.Create: {"sh", "-c", ": > \"$0\" && rm -- \"$0\"", target},
	}[op]
}

// inspectImage finds which of cat, ls and sh the server's image runs, with
// no network and a read-only root as the server's container; none when
// the image is not on this machine: a reproduce line then runs the
// stand-in image when it is kept (keep), else binds the probe in (the
// engine pulls the server's image).
func inspectImage(ctx context.Context, engine, image, probeBin, standIn string, keep bool) *imageTools {
	it := &imageTools{standIn: standIn, image: image, probe: probeBin, has: map[string]bool{}}
	if image == "" || exec.CommandContext(ctx, engine, "image", "inspect", image).Run() != nil {
		it.kept = keep
		return it
	}
	for tool, args := range map[string][]string{"cat": {"/dev/null"}, "ls": {"/"}, "sh": {"-c", ":"}} {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		run := append([]string{"run", "--rm", "--network", "none", "--read-only", "--cap-drop", "ALL",
			"--security-opt", "no-new-privileges", "--pull", "never", "--entrypoint", tool, image}, args...)
		it.has[tool] = exec.CommandContext(cctx, engine, run...).Run() == nil
		cancel()
	}
	return it
}

// engineCommand is what follows the image in a reproduce line, and the
// flags before it: the tool as the image's entrypoint, or the probe bound
// in read-only. ok is false when neither can be spelled.
func (it *imageTools) engineCommand(op probe.Op, target string) (flags, command []string, ok bool) {
	tool := toolOf(op, target)
	if tool == nil {
		return nil, nil, false
	}
	if it.kept {
		return nil, []string{"/mcpolicy-probe", "probe", string(op) + ":" + target}, true
	}
	if it.has[tool[0]] {
		return []string{"--entrypoint", tool[0]}, tool[1:], true
	}
	if it.probe == "" || strings.ContainsAny(it.probe, ",\"\n") {
		return nil, nil, false
	}
	return []string{"--mount", "type=bind,source=" + it.probe + ",target=/mcpolicy-probe,readonly", "--entrypoint", "/mcpolicy-probe"},
		[]string{"probe", string(op) + ":" + target}, true
}
