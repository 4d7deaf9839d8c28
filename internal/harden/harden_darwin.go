package harden

import (
	"errors"

	"golang.org/x/sys/unix"
)

func apply() error { return unix.PtraceDenyAttach() }

// Dumpable cannot be read back on macOS.
func Dumpable() (bool, error) { return false, errors.New("not available on macOS") }

// fdDir lists the process's open descriptors.
const fdDir = "/dev/fd"
