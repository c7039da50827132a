//go:build !linux

package launch

import "io"

// ShieldTerminals is Linux's (terminal_linux.go): elsewhere the seatbelt
// wrapper starts the server, and nothing here does.
func ShieldTerminals(verbose io.Writer) error { return nil }

// RelayArg is argv[1] of the launcher re-executed as a terminal relay.
const RelayArg = "__mcpolicy-terminal-relay"

// Relay is Linux's.
func Relay(dir string) {}
