package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/mcpolicy/mcpolicy/project"
	"github.com/spf13/cobra"
)

// policyFlag is how every command names the policy: -p/--policy FILE|DIR
// (default "."). --path, its earlier name on some commands (prove, hook
// install), still works: hidden, with a notice (aliasFlag).
func policyFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVarP(p, "policy", "p", ".", "policy file or folder")
	cmd.Flags().StringVar(p, "path", ".", "the earlier name of --policy")
	aliasFlag(cmd, "path", "-p/--policy")
}

// policyNamed reports whether -p/--policy (or --path) was given.
func policyNamed(cmd *cobra.Command) bool {
	return cmd.Flags().Changed("policy") || cmd.Flags().Changed("path")
}

// policyPath is the policy of a command that also takes it as its one
// positional argument (build, vet, lint): the argument or the flag (named:
// given on the command line), not two different ones.
func policyPath(args []string, flag string, named bool) (string, error) {
	if len(args) == 0 {
		return flag, nil
	}
	if named && flag != args[0] {
		return "", &exitError{code: ExitError, err: fmt.Errorf("the policy is named twice (%s and -p %s): give one", args[0], flag)}
	}
	return args[0], nil
}

// policyMissing is the error for a policy path that does not exist (as
// project.Discover says it), for the commands that read the path another
// way first (diff's git side, hook install); nil when it exists.
func policyMissing(path string) error {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return &project.NoPolicyError{Path: path, Missing: true}
	}
	return nil
}
