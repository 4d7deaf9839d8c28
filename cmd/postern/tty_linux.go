package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// flushInput discards the terminal's pending input.
func flushInput(tty *os.File) {
	unix.IoctlSetInt(int(tty.Fd()), unix.TCFLSH, unix.TCIFLUSH)
}
