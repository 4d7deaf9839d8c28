//go:build linux

// Package nofiles runs a test's process out of descriptors, as a gateway
// whose every descriptor is taken is: tests only.
package nofiles

import (
	"os"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// Exhaust runs this process out of descriptors until restore (which the
// test's cleanup also calls): it lowers the soft descriptor limit to just
// above the highest descriptor open and takes every free number below
// it, so that opening any descriptor fails with EMFILE, and closing any
// descriptor the process held frees one it can open again, as in a
// process whose every descriptor is taken. Lowering the limit to the
// lowest free number instead would leave the descriptors above a hole
// (an inherited descriptor numbered 251, one closed since) useless when
// closed.
func Exhaust(t testing.TB) (restore func()) {
	t.Helper()
	var was syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &was); err != nil {
		t.Fatal(err)
	}
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	highest := 0
	for _, e := range es {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			highest = max(highest, n)
		}
	}
	lim := was
	lim.Cur = uint64(highest + 1)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	var taken []int
	restored := false
	restore = func() {
		if !restored {
			restored = true
			for _, fd := range taken {
				unix.Close(fd)
			}
			syscall.Setrlimit(syscall.RLIMIT_NOFILE, &was)
		}
	}
	t.Cleanup(restore)
	for {
		fd, err := unix.Open(os.DevNull, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == unix.EMFILE {
			return restore
		}
		if err != nil {
			restore()
			t.Fatal(err)
		}
		taken = append(taken, fd)
	}
}
