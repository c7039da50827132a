package escape_test

import (
	"fmt"
	"strings"
	"testing"
)

// scratchManyScenarios (#34): a policy with two scratch tmpfs gets two,
// each bounded by its own size: a write past it fails with ENOSPC, while
// the same write fits in the other, bigger one.
var scratchManyScenarios = []scenario{
	{
		name: "scratch-many", backends: []string{"bwrap", "docker", "podman", "landlock"}, weakBackend: "bwrap",
		spec:         scratchManySpec(bindPolicy),
		landlockSpec: ptr(scratchManySpec(landlockPolicy)),
		real: func(t *testing.T, sb *sandbox) {
			o := sb.launchEntry(t, scratchManySteps()...)
			if r := o.results[fillSmall]; r.ok || r.errno != "ENOSPC" {
				t.Errorf("%s: %s: %s, want ENOSPC: the 1m scratch is not bounded by its own size\nstdout:\n%s\nstderr:\n%s", sb.backend, fillSmall, r.describe(), o.stdout, lastLines([]byte(o.stderr), 10))
			}
			if r := o.results[fillLarge]; !r.ok {
				t.Errorf("%s: %s: %s: the 4m scratch is not writable, or not there\nstdout:\n%s\nstderr:\n%s", sb.backend, fillLarge, r.describe(), o.stdout, lastLines([]byte(o.stderr), 10))
			}
			if r := o.results[fillLargeMore]; r.ok || r.errno != "ENOSPC" {
				t.Errorf("%s: %s: %s, want ENOSPC: the 4m scratch is not bounded", sb.backend, fillLargeMore, r.describe())
			}
		},
		weak: func(t *testing.T, sb *sandbox) {
			// Without the artefact's --size, the first target is an
			// unbounded tmpfs: the suite must see the write succeed.
			argv := sb.weakBwrapArgv(t)
			for i := 0; i+3 < len(argv); i++ {
				if argv[i] == "--size" && argv[i+3] == scratchSmall {
					argv = append(argv[:i], argv[i+2:]...)
					break
				}
			}
			o := sb.launchWith(t, "weakened bwrap argv (no --size)", "bwrap", argv, launchOpts{}, scratchManySteps())
			if r := o.results[fillSmall]; !r.ok {
				t.Errorf("weakened bwrap: %s: %s: the suite cannot see an unbounded scratch", fillSmall, r.describe())
			}
		},
	},
}

const (
	scratchSmall  = "/tmp"
	scratchLarge  = "/cache"
	fillSmall     = "write 2 MiB into the 1m scratch " + scratchSmall
	fillLarge     = "write 2 MiB into the 4m scratch " + scratchLarge
	fillLargeMore = "write 4 MiB more into the 4m scratch " + scratchLarge
)

// scratchManySpec is policy with two scratch tmpfs, 1m at /tmp and 4m at
// /cache.
func scratchManySpec(policy string) projectSpec {
	policy = strings.Replace(policy, "servers: attacker: {\n", fmt.Sprintf(
		"servers: attacker: {\n\tscratch: [{target: %q, size: \"1m\"}, {target: %q, size: \"4m\"}]\n", scratchSmall, scratchLarge), 1)
	return projectSpec{policy: [2]string{"mcpolicy.cue", policy}}
}

// fill writes n KiB of zeros to file through cat, 64 KiB at a time (the
// image's busybox has no dd; cat, unlike the shell's printf, names the
// errno of a failed write).
func fill(file string, kib int) string {
	return fmt.Sprintf(`s=$(printf '%%065536d' 0); i=0; while [ $i -lt %d ]; do printf %%s "$s"; i=$((i+1)); done | cat > %s`, kib/64, file)
}

func scratchManySteps() []step {
	return []step{
		denyWith(fillSmall, fill(scratchSmall+"/big", 2048), "ENOSPC"),
		may(fillLarge, fill(scratchLarge+"/big", 2048)),
		denyWith(fillLargeMore, fill(scratchLarge+"/more", 4096), "ENOSPC"),
	}
}
