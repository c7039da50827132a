package cli

import (
	"io"
	"os"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/runtime/launch"
	"github.com/mcpolicy/mcpolicy/runtime/launchlog"
)

// launchLog is the record of a launch of plan's server by entry (run,
// exec): the launch log doctor --server reads. No value of the plan's
// env grants or credential sources is written, nor a log inside a read-write grant.
func launchLog(entry string, plan *compiler.Plan, m compiler.Machine, writable, environ []string, stderr io.Writer) *launchlog.Launch {
	l := launchlog.New(entry, os.Getenv, stderr)
	l.Set(m.ProjectRoot, plan.Server, "", plan.Hash)
	// A credential's value is withheld from the record as an env grant's:
	// a refusal that quoted it would put it in a file.
	l.Secrets(environ, append(plan.EnvNames(), plan.CredentialSourceEnv()...))
	l.Writable(writable)
	return l
}

// logRefusal logs err as l's refusal, with its fix, and returns it.
func logRefusal(l *launchlog.Launch, err error) error {
	if err == nil {
		return nil
	}
	return l.Refuse(err, launch.RefusalFix(err))
}
