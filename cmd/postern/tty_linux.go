package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// flushInput discards the terminal's pending input.
func flushInput(tty *os.File) {
	unix.IoctlSetInt(int(tty.Fd()), unix.TCFLSH, unix.TCIFLUSH)
}

// pendingInput is how many bytes the terminal holds that were typed and
// not read; in canonical mode, those of whole lines.
func pendingInput(tty *os.File) int {
	n, err := unix.IoctlGetInt(int(tty.Fd()), unix.TIOCINQ)
	if err != nil {
		return 0
	}
	return n
}
