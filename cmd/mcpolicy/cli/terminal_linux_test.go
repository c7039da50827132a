package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

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

// TestExplainAndHelpFoldedOnATerminal: on a terminal of 80 columns no line
// of explain --backend bwrap, nor of run's help, is wider (but a single
// word longer than the room), and folding keeps every word; into a pipe
// nothing is folded.
func TestExplainAndHelpFoldedOnATerminal(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", t.TempDir())
	t.Setenv("COLUMNS", "")
	writeFile(t, filepath.Join(dir, "mcpolicy.cue"), policy)
	for _, args := range [][]string{{"explain", "-p", dir, "--backend", "bwrap"}, {"run", "--help"}} {
		_, piped, _ := run(t, args...)
		code, shown, errs := runOnTerminal(t, 80, args...)
		if code != ExitOK {
			t.Fatalf("%v on a terminal: exit %d\n%s", args, code, errs)
		}
		wide := 0
		for _, l := range strings.Split(piped, "\n") {
			if utf8.RuneCountInString(l) > 80 {
				wide++
			}
		}
		if wide == 0 {
			t.Errorf("%v: no line wider than 80 columns into a pipe: the test shows nothing", args)
		}
		for _, l := range strings.Split(shown, "\n") {
			if utf8.RuneCountInString(l) > 80 && strings.Contains(strings.TrimSpace(l), " ") {
				t.Errorf("%v on 80 columns: a line of %d:\n%s", args, utf8.RuneCountInString(l), l)
			}
		}
		if got, want := strings.Fields(shown), strings.Fields(piped); !slices.Equal(got, want) {
			t.Errorf("%v: folding changed the words (%d, want %d)", args, len(got), len(want))
		}
	}
	t.Setenv("COLUMNS", "120")
	_, shown, _ := runOnTerminal(t, 80, "explain", "-p", dir, "--backend", "bwrap")
	longest := 0
	for _, l := range strings.Split(shown, "\n") {
		if strings.Contains(strings.TrimSpace(l), " ") {
			longest = max(longest, utf8.RuneCountInString(l))
		}
	}
	if longest <= 80 || longest > 120 {
		t.Errorf("COLUMNS=120 on an 80-column terminal: longest line %d, want 81..120", longest)
	}
}

// TestDiffHonoursNoColor: diff colours its verdicts on a terminal, and
// not when NO_COLOR is set (https://no-color.org), nor into a pipe.
func TestDiffHonoursNoColor(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", t.TempDir())
	old, new := filepath.Join(dir, "old", "mcpolicy.cue"), filepath.Join(dir, "new", "mcpolicy.cue")
	writeFile(t, old, policy)
	writeFile(t, new, strings.Replace(policy, `"256m"`, `"1g"`, 1))
	t.Setenv("NO_COLOR", "")
	code, out, errs := runOnTerminal(t, 100, "diff", old, new)
	if code != ExitWidened || !strings.Contains(out, "\x1b[1;31mWIDENED\x1b[0m") {
		t.Fatalf("diff on a terminal: exit %d, want %d and a red WIDENED:\n%q\n%s", code, ExitWidened, out, errs)
	}
	t.Setenv("NO_COLOR", "1")
	if code, out, errs := runOnTerminal(t, 100, "diff", old, new); code != ExitWidened || strings.Contains(out, "\x1b[") || !strings.Contains(out, "WIDENED") {
		t.Errorf("diff on a terminal with NO_COLOR=1: exit %d, want no escape:\n%q\n%s", code, out, errs)
	}
	t.Setenv("NO_COLOR", "")
	if code, out, _ := run(t, "diff", old, new); code != ExitWidened || strings.Contains(out, "\x1b[") {
		t.Errorf("diff into a pipe: exit %d, want no escape:\n%q", code, out)
	}
}
