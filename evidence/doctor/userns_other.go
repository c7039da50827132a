//go:build !linux

package doctor

import (
	"context"
	"fmt"
	"runtime"
)

// tryUserNS: user and mount namespaces are Linux's (userns_linux.go).
func tryUserNS(context.Context) error {
	return fmt.Errorf("user and mount namespaces need Linux; this is %s: on macOS use the seatbelt backend", runtime.GOOS)
}
