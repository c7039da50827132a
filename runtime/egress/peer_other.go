//go:build !linux

package egress

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// CheckPeer: only Linux tells who is at the other end; elsewhere (macOS,
// where the seatbelt backend reaches the proxy over TCP and nothing uses
// the socket) every connection to the socket is refused.
func CheckPeer(c net.Conn, root, uid int) (Peer, error) {
	return Peer{}, ErrNoPeerCredentials
}

// ProcessUID is not available here.
func ProcessUID(pid int) (euid, fsuid int, err error) {
	return 0, 0, fmt.Errorf("process %d: %w", pid, ErrNoPeerCredentials)
}

// FromSelf: only Linux tells who is at the other end.
func FromSelf(c net.Conn) bool { return false }

// handedConn: only Linux's forwarder hands connections over.
func handedConn(fd int) (net.Conn, error) {
	unix.Close(fd)
	return nil, ErrNoPeerCredentials
}
