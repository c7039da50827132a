package entry

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/mcpolicy/mcpolicy/runtime/launch"
)

// EnvFileUsable checks an env file that exists as the launcher will read it
// at spawn (launch.EnvFile: no symlink, one link, yours, mode 600), so that
// `client --write` refuses what would otherwise fail later, where the MCP
// client shows only that the server closed. A file that does not exist yet
// is not an error (exists is false): the user creates it.
func EnvFileUsable(client, file string) (exists bool, err error) {
	if _, err := os.Lstat(file); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	_, err = (launch.EnvFile{Path: file}).Load(nil)
	var lu *launch.UnsupportedError
	if errors.As(err, &lu) { // macOS: no launcher reads it there
		return true, nil
	}
	if err != nil {
		return true, &EnvFileError{fmt.Errorf("%w\n\tmcpolicy-launch would refuse it each time %s starts the server, and %s would show only that the server closed; fix it, then run again", err, client, client)}
	}
	return true, nil
}

// EnvFileOf is the env file a launch reads grant values from, "" if none.
func EnvFileOf(l *Launch) string {
	for i := 0; i+1 < len(l.Args); i++ {
		if l.Args[i] == "--" {
			break
		}
		if l.Args[i] == "--env-file" {
			return l.Args[i+1]
		}
	}
	return ""
}
