//go:build !linux

package testnetns

import (
	"errors"
	"runtime"
	"testing"
)

func create(testing.TB, []string) (*NS, string) {
	return nil, "network namespaces are Linux's; this is " + runtime.GOOS
}

func (n *NS) in(func() error) error { return errors.New("network namespaces are Linux's") }

func (n *NS) Attach(testing.TB, string, string) {}
