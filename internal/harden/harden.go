// Package harden makes the daemon's memory unavailable to other processes
// of the same user: it must be called before any secret is read.
//
// On Linux it sets PR_SET_DUMPABLE to 0, which makes /proc/PID/mem, maps,
// environ and exe root-owned and refuses ptrace even where Yama is absent,
// and sets RLIMIT_CORE to 0 so that a crash leaves no core file. On macOS
// it refuses debugger attachment (PT_DENY_ATTACH) and core files.
//
// What a dynamic loader runs in a program comes before any of that:
// Interpreter tells whether a program is started by one, and
// LoaderVariables are the variables that make it load more than the
// program names, for the programs the gateway starts to go without.
package harden

import "golang.org/x/sys/unix"

// Apply hardens the current process.
func Apply() error {
	if err := unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{}); err != nil {
		return err
	}
	return apply()
}
