// Command mcpolicy-launch starts a server under a committed Landlock
// ruleset (.mcpolicy/landlock/SERVER.json), as `mcpolicy exec` does but
// without compiling the policy. It links no CUE: Go package initialisation
// is most of a launch's cost, and a client that spawns a server per request
// pays it every time.
//
//	mcpolicy-launch [-v] RULESET.json
//
// ${PROJECT_ROOT} in the ruleset is $PROJECT_ROOT, or the folder three
// levels above the ruleset (PROJECT/.mcpolicy/landlock/SERVER.json);
// ${HOME} is $HOME. Exit codes: the server's own; 4 when this machine
// cannot enforce the ruleset; 1 on a usage or read error; 126 when the
// launcher failed inside its namespaces.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mcpolicy/mcpolicy/launch"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == launch.Stage2Arg {
		launch.Stage2()
	}
	verbose := flag.Bool("v", false, "say on stderr what is enforced")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: mcpolicy-launch [-v] RULESET.json\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(1)
	}
	code, err := run(flag.Arg(0), *verbose)
	var ue *launch.UnsupportedError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(os.Stderr, "mcpolicy-launch: %v\n", err)
		os.Exit(4)
	case err != nil:
		fmt.Fprintf(os.Stderr, "mcpolicy-launch: %v\n", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(file string, verbose bool) (int, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return 0, err
	}
	b, err := os.ReadFile(abs)
	if err != nil {
		return 0, err
	}
	var rs launch.Ruleset
	if err := json.Unmarshal(b, &rs); err != nil {
		return 0, fmt.Errorf("%s: not a ruleset: %v", file, err)
	}
	if len(rs.Command) == 0 {
		return 0, fmt.Errorf("%s: the ruleset has no command", file)
	}
	root := os.Getenv("PROJECT_ROOT")
	if root == "" {
		root = filepath.Dir(filepath.Dir(filepath.Dir(abs)))
	}
	if err := rs.Resolve(root, os.Getenv("HOME")); err != nil {
		return 0, fmt.Errorf("%s: %v", file, err)
	}
	opts := launch.Options{Environ: os.Environ()}
	if verbose {
		opts.Verbose = os.Stderr
	}
	return launch.Start(&rs, opts)
}
