package hugepages

import (
	"bytes"
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// againVar marks the program Off started again, so that it does not start
// it a second time, and holds its name; Off removes it from the
// environment.
const againVar = "POSTERN_HUGEPAGES_OFF"

// modeFile says when the kernel gives anonymous memory huge pages.
const modeFile = "/sys/kernel/mm/transparent_hugepage/enabled"

// Off turns huge pages off for the process and what it starts. Where the
// kernel gives them to all memory it then starts the program again
// (execve of /proc/self/exe, with the same process id, arguments,
// environment and descriptors, and the name ps shows), so that it returns
// only in the program started so; where the setting or the exec fails (a
// kernel older than 3.15, no /proc), it returns and the process goes on
// as it was. Call it first thing, before the program opens anything or
// starts a goroutine whose work an exec would cut short.
func Off() {
	name, again := os.LookupEnv(againVar)
	os.Unsetenv(againVar)
	if again {
		// The kernel names a program after the file it executes,
		// "exe"; it gets back the name it had.
		rename(name)
	}
	inherited := disabled()
	if !markOff() || inherited || again || !allMemory() {
		return
	}
	// The first thread's name, which ps shows.
	b, _ := os.ReadFile("/proc/self/comm")
	// On failure, the setting holds from here on.
	syscall.Exec("/proc/self/exe", os.Args, append(os.Environ(), againVar+"="+strings.TrimSuffix(string(b), "\n")))
}

// allMemory reports whether the kernel gives huge pages to all anonymous
// memory ("[always]" in modeFile).
func allMemory() bool {
	b, err := os.ReadFile(modeFile)
	return err == nil && bytes.Contains(b, []byte("[always]"))
}

func setDisabled(off bool) error {
	v := 0
	if off {
		v = 1
	}
	return unix.Prctl(unix.PR_SET_THP_DISABLE, uintptr(v), 0, 0, 0)
}

// disabled reports whether huge pages are off for the process.
func disabled() bool {
	v, err := unix.PrctlRetInt(unix.PR_GET_THP_DISABLE, 0, 0, 0, 0)
	return err == nil && v != 0
}
