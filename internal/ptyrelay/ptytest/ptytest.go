// Package ptytest holds what tests of terminal handling share.
package ptytest

import (
	"os"

	"golang.org/x/sys/unix"
)

// DetachTerminal gives up the calling process's controlling terminal,
// if it has one, so that the programs it starts have none (its process
// group stays, and with it the terminal's Ctrl-C): a test calls it first,
// so that the runs it starts never relay the terminal "go test" was
// started from. (Called by a session leader, it hangs the terminal's
// foreground group up.)
func DetachTerminal() {
	f, err := os.Open("/dev/tty")
	if err != nil {
		return
	}
	unix.IoctlSetInt(int(f.Fd()), unix.TIOCNOTTY, 0)
	f.Close()
}
