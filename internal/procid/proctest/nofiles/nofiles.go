//go:build linux

// Package nofiles runs a test's process out of descriptors, as a gateway
// whose every descriptor is taken is: tests only.
package nofiles

import (
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// Exhaust lowers this process's soft descriptor limit to its lowest free
// descriptor number, so that opening any descriptor fails with EMFILE,
// until restore (which the test's cleanup also calls).
func Exhaust(t testing.TB) (restore func()) {
	t.Helper()
	var was syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &was); err != nil {
		t.Fatal(err)
	}
	free, err := unix.Dup(0)
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(free)
	lim := was
	lim.Cur = uint64(free)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	restored := false
	restore = func() {
		if !restored {
			restored = true
			syscall.Setrlimit(syscall.RLIMIT_NOFILE, &was)
		}
	}
	t.Cleanup(restore)
	return restore
}
