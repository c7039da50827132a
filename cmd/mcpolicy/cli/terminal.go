package cli

import (
	"io"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// terminalWidth is w's width in columns when w is a terminal, and whether
// it is one: COLUMNS when set to a number, else what the terminal says,
// else 80. Output that is not a terminal is read by a script or kept in a
// transcript: it is neither wrapped nor coloured, so it reads the same on
// every machine.
func terminalWidth(w io.Writer) (int, bool) {
	f, ok := w.(*os.File)
	if !ok {
		return 0, false
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0, false // not a terminal (/dev/null is a character device, not one)
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n, true
	}
	if ws.Col > 0 {
		return int(ws.Col), true
	}
	return 80, true
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	_, ok := terminalWidth(w)
	return ok
}

// colour reports whether to colour what goes to w: a terminal, and
// NO_COLOR unset or empty (https://no-color.org).
func colour(w io.Writer) bool {
	return isTerminal(w) && os.Getenv("NO_COLOR") == ""
}
