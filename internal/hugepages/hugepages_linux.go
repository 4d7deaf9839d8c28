package hugepages

import (
	"bytes"
	"os"

	"golang.org/x/sys/unix"

	"github.com/postern/postern/internal/startagain"
)

// againVar marks a program that a program of postern's started with huge
// pages off by its own choice (Off starting the program again, or
// [ChildEnv]); Off removes it from the environment.
const againVar = "POSTERN_HUGEPAGES_OFF"

// modeFile says when the kernel gives anonymous memory huge pages.
const modeFile = "/sys/kernel/mm/transparent_hugepage/enabled"

// Off turns huge pages off for the process and what it starts. Where the
// kernel gives them to all memory it then starts the program again
// (execve of /proc/self/exe, with the same process id, arguments,
// environment and descriptors, and the name ps shows), so that it returns
// only in the program started so; where the setting or the exec fails (a
// kernel older than 3.15, no /proc), it returns and the process goes on
// as it was. A program that starts with huge pages off already, not from
// a program of postern's that turned them off, was handed the setting by
// the person: it is kept, for all the program does and all it starts,
// and Allow changes nothing. Call Off first thing, before the program
// opens anything or starts a goroutine whose work an exec would cut
// short.
func Off() {
	if TurnOff() {
		// On failure, the setting holds from here on.
		startagain.Exec(ChildEnv()...)
	}
}

// TurnOff is Off without the start again: it reports whether the program
// must start again for the setting to hold, and leaves that to the
// caller, which may have a setting of its own to start again for
// (heldsig.Hold), with [ChildEnv] added to the environment.
func TurnOff() (startAgain bool) {
	startagain.Restore()
	_, ours := os.LookupEnv(againVar)
	os.Unsetenv(againVar)
	if !ours && disabled() {
		return false
	}
	return markOff() && !ours && allMemory()
}

// ChildEnv returns what to add to the environment of a program of
// postern's started from this one (the daemon a detaching gateway
// starts, or this program started again) so that its Off knows huge
// pages are off by the program's choice, not the person's, and it gets
// this program's name: nothing where Off did not turn them off.
func ChildEnv() []string {
	state.mu.Lock()
	off := state.off
	state.mu.Unlock()
	if !off {
		return nil
	}
	return []string{againVar + "=1", startagain.NameEnv()}
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
