package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// runOnTerminal runs mcpolicy with stdout on a pseudo-terminal of cols
// columns and returns the exit code, what the terminal showed (its
// CR LF made LF again) and stderr.
func runOnTerminal(t *testing.T, cols uint16, args ...string) (int, string, string) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("no pseudo-terminal here: %v", err)
	}
	defer master.Close()
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	slave, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Col: cols, Row: 24}); err != nil {
		t.Fatal(err)
	}
	var shown bytes.Buffer
	done := make(chan struct{})
	go func() {
		io.Copy(&shown, master) // until EIO: the slave closed
		close(done)
	}()
	var errb bytes.Buffer
	code := Run(args, slave, &errb)
	slave.Close()
	<-done
	return code, string(bytes.ReplaceAll(shown.Bytes(), []byte("\r\n"), []byte("\n"))), errb.String()
}
