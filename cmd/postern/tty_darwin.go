package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// flushInput discards the terminal's pending input.
func flushInput(tty *os.File) {
	unix.IoctlSetPointerInt(int(tty.Fd()), unix.TIOCFLUSH, fread)
}

// fread is FREAD of <sys/fcntl.h>: flush the input queue.
const fread = 1
