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

// SelfInterpreter is "" on macOS, where dyld starts every program (and
// loads the libraries DYLD_INSERT_LIBRARIES names into one not signed
// with the hardened runtime): nothing a build changes.
func SelfInterpreter() (string, error) { return "", nil }
