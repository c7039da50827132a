package launch

import (
	"fmt"
	"os"
	"strconv"
)

// The placeholders a plan with `user: "invoker"` carries in its artefacts
// (compiler.UIDPlaceholder, GIDPlaceholder; repeated here: the launcher
// links no compiler).
const (
	uidPlaceholder = "${UID}"
	gidPlaceholder = "${GID}"
)

// invokerID resolves a uid or gid operand: ${UID} and ${GID} become the ids
// of the user running the launcher, refused when either is 0 (a policy's
// "invoker" never turns into root because root launched it); any other
// value is returned as it is.
func invokerID(server, v string) (string, error) {
	var id int
	switch v {
	case uidPlaceholder:
		id = os.Getuid()
	case gidPlaceholder:
		id = os.Getgid()
	default:
		return v, nil
	}
	if os.Getuid() == 0 || os.Getgid() == 0 {
		return "", fmt.Errorf("server %q runs as the invoking user (user: \"invoker\"), and that is root here: refusing to run it as root; start it as your own user, or set user: \"UID:GID\"", server)
	}
	return strconv.Itoa(id), nil
}

// invokerUser resolves "${UID}:${GID}" (docker's --user, a ruleset's user).
func invokerUser(server, v string) (string, error) {
	if v != uidPlaceholder+":"+gidPlaceholder {
		return v, nil
	}
	uid, err := invokerID(server, uidPlaceholder)
	if err != nil {
		return "", err
	}
	gid, err := invokerID(server, gidPlaceholder)
	return uid + ":" + gid, err
}
