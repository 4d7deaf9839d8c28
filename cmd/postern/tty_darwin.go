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

// pendingInput is how many bytes the terminal holds that were typed and
// not read; in canonical mode, those of whole lines.
func pendingInput(tty *os.File) int {
	n, err := unix.IoctlGetInt(int(tty.Fd()), fionread)
	if err != nil {
		return 0
	}
	return n
}

// fionread is FIONREAD of <sys/filio.h>, _IOR('f', 127, int): how many
// bytes wait to be read.
const fionread = 0x4004667f
