// Command cuecompare times mcpolicy's compile path against CUE itself,
// whole processes side by side: `mcpolicy build` of the bundled example
// against `cue export` of the same file, and of a generated 500-server
// policy, plus `mcpolicy lint` of it. The cue command is the one at the
// version go.mod requires, built twice: as `go run cuelang.org/go/cmd/cue@VERSION`
// builds it (this machine's cgo default: dynamically linked where a C
// compiler is found) and statically (CGO_ENABLED=0), the way mcpolicy is
// built and installed; a static Go binary starts faster, so the second
// is the like-for-like comparison. Runs are interleaved, so a machine
// that gets busier slows every command alike, and each figure is a median.
//
//	go run ./bench/_cuecompare [-n 21]
//
// It prints the figures; it never fails because a machine is slow. Issue
// 17 asks for: build of one policy <= 1.0x cue export of it; 500 servers
// build + lint < 0.5 s.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mcpolicy/mcpolicy/bench"
)

func main() {
	n := flag.Int("n", 21, "runs of each command (the median is reported)")
	servers := flag.Int("servers", 500, "servers in the generated policy")
	against := flag.String("against", "", "another mcpolicy binary to time beside this one (e.g. one built from main)")
	flag.Parse()
	if err := run(*n, *servers, *against); err != nil {
		fmt.Fprintln(os.Stderr, "cuecompare:", err)
		os.Exit(1)
	}
}

// step is one command timed: wall clock and CPU (user + system) per run.
type step struct {
	name      string
	args      []string
	wall, cpu []time.Duration
}

func (s *step) median() (wall, cpu time.Duration) { return median(s.wall), median(s.cpu) }

func median(d []time.Duration) time.Duration {
	d = slices.Clone(d)
	slices.Sort(d)
	return d[len(d)/2]
}

func run(n, servers int, against string) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "mcpolicy-cuecompare-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	version, err := output(root, "go", "list", "-m", "-f", "{{.Version}}", "cuelang.org/go")
	if err != nil {
		return err
	}
	fmt.Printf("building mcpolicy and cue %s (go install cuelang.org/go/cmd/cue@%s)...\n", version, version)
	mcpolicy := filepath.Join(tmp, "mcpolicy")
	if _, err := outputEnv(root, []string{"CGO_ENABLED=0"}, "go", "build", "-o", mcpolicy, "./cmd/mcpolicy"); err != nil {
		return err
	}
	cueBuilt := func(dir string, env ...string) (string, error) {
		gobin := filepath.Join(tmp, dir)
		env = append(env, "GOBIN="+gobin, "GOFLAGS=", "GOWORK=off")
		_, err := outputEnv(tmp, env, "go", "install", "cuelang.org/go/cmd/cue@"+version)
		return filepath.Join(gobin, "cue"), err
	}
	cue, err := cueBuilt("gobin")
	if err != nil {
		return err
	}
	cueStatic, err := cueBuilt("gobin-static", "CGO_ENABLED=0")
	if err != nil {
		return err
	}

	// The example, copied (build writes beside it), and the generated policy.
	example := filepath.Join(tmp, "example")
	if err := copyDir(filepath.Join(root, "examples", "code-index"), example); err != nil {
		return err
	}
	large := filepath.Join(tmp, "large")
	if err := bench.WriteServers(large, servers); err != nil {
		return err
	}
	big := fmt.Sprintf("%d servers", servers)
	steps := []*step{
		{name: "cue version", args: []string{cue, "version"}},
		{name: "mcpolicy --version", args: []string{mcpolicy, "--version"}},
		{name: "cue export, example", args: []string{cue, "export", filepath.Join(example, "mcpolicy.cue")}},
		{name: "mcpolicy build, example", args: []string{mcpolicy, "build", example}},
		{name: "cue export, " + big, args: []string{cue, "export", filepath.Join(large, "mcpolicy.cue")}},
		{name: "mcpolicy build, " + big, args: []string{mcpolicy, "build", large}},
		{name: "mcpolicy lint, " + big, args: []string{mcpolicy, "lint", large}},
		{name: "static cue version", args: []string{cueStatic, "version"}},
		{name: "static cue export, example", args: []string{cueStatic, "export", filepath.Join(example, "mcpolicy.cue")}},
		{name: "static cue export, " + big, args: []string{cueStatic, "export", filepath.Join(large, "mcpolicy.cue")}},
	}
	if against != "" {
		steps = append(steps,
			&step{name: "against: build, example", args: []string{against, "build", example}},
			&step{name: "against: build, " + big, args: []string{against, "build", large}},
			&step{name: "against: lint, " + big, args: []string{against, "lint", large}})
	}
	for _, s := range steps { // once each, untimed: caches, and a failure shows here
		if out, err := exec.Command(s.args[0], s.args[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v\n%s", strings.Join(s.args, " "), err, out)
		}
	}
	fmt.Printf("%d interleaved runs of each command (whole process, medians)...\n\n", n)
	for range n {
		for _, s := range steps {
			cmd := exec.Command(s.args[0], s.args[1:]...)
			start := time.Now()
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("%s: %v", strings.Join(s.args, " "), err)
			}
			s.wall = append(s.wall, time.Since(start))
			s.cpu = append(s.cpu, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
		}
	}
	fmt.Printf("%-28s %10s %10s\n", "", "wall", "cpu")
	for _, s := range steps {
		w, c := s.median()
		fmt.Printf("%-28s %10s %10s\n", s.name, ms(w), ms(c))
	}
	ratio := func(a, b *step) string {
		aw, ac := a.median()
		bw, bc := b.median()
		return fmt.Sprintf("%.2fx wall, %.2fx cpu", float64(aw)/float64(bw), float64(ac)/float64(bc))
	}
	fmt.Println()
	fmt.Printf("build of the example / cue export of it:  %s  (issue 17: <= 1.0x)\n", ratio(steps[3], steps[2]))
	fmt.Printf("  against static cue (built like mcpolicy): %s\n", ratio(steps[3], steps[8]))
	fmt.Printf("build of %s / cue export of it: %s\n", big, ratio(steps[5], steps[4]))
	fmt.Printf("  against static cue:                        %s\n", ratio(steps[5], steps[9]))
	fmt.Printf("start-up (--version / cue version):          %s; against static cue: %s\n", ratio(steps[1], steps[0]), ratio(steps[1], steps[7]))
	bw, bc := steps[5].median()
	lw, lc := steps[6].median()
	fmt.Printf("build + lint of %s:               %s wall, %s cpu  (issue 17: < 500 ms)\n", big, ms(bw+lw), ms(bc+lc))
	if against != "" {
		fmt.Printf("against: build of the example / cue export: %s\n", ratio(steps[10], steps[2]))
		fmt.Printf("against: build of %s / cue export: %s\n", big, ratio(steps[11], steps[4]))
		bw, bc := steps[11].median()
		lw, lc := steps[12].median()
		fmt.Printf("against: build + lint of %s:      %s wall, %s cpu\n", big, ms(bw+lw), ms(bc+lc))
	}
	return nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

func moduleRoot() (string, error) {
	gomod, err := output(".", "go", "env", "GOMOD")
	if err != nil {
		return "", err
	}
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("run from inside the mcpolicy module")
	}
	return filepath.Dir(gomod), nil
}

func output(dir string, name string, args ...string) (string, error) {
	return outputEnv(dir, nil, name, args...)
}

func outputEnv(dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.Bytes())
	}
	return strings.TrimSpace(string(out)), nil
}

// copyDir copies the policy folder, without the output folder build writes.
func copyDir(from, to string) error {
	return filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() && d.Name() == ".mcpolicy" {
			return filepath.SkipDir
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), data, 0o644)
	})
}
