package harden

import "golang.org/x/sys/unix"

func apply() error { return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) }

// Dumpable reports whether the process can be inspected by others of its
// user.
func Dumpable() (bool, error) {
	v, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	return v != 0, err
}

// fdDir lists the process's open descriptors.
const fdDir = "/proc/self/fd"

// SelfInterpreter is Interpreter of the running program.
func SelfInterpreter() (string, error) { return Interpreter("/proc/self/exe") }
