// Package ptytest holds what tests of terminal handling share.
package ptytest

import (
	"os"
	"os/signal"

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

// DefaultSignals gives the programs the calling process starts SIGHUP,
// SIGINT, SIGQUIT and SIGTERM at their default, where the runner left
// them ignored ("nohup make test" ignores SIGHUP; a script's background
// job, SIGINT and SIGQUIT), which a program inherits and, as it should,
// keeps ignoring: the calling process catches them instead, and drops
// them, and a caught signal is at its default in a program it execs. A
// test calls it first, so that the tests of how a program answers these
// signals test the program, not how "go test" was started.
func DefaultSignals() {
	for _, sig := range []os.Signal{unix.SIGHUP, unix.SIGINT, unix.SIGQUIT, unix.SIGTERM} {
		if signal.Ignored(sig) {
			signal.Notify(make(chan os.Signal, 1), sig)
		}
	}
}
