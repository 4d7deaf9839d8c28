package proctest

import (
	"bytes"
	"fmt"
	"os"
	"testing"
	"time"
)

// WaitSleeping waits until the real process pid runs the program named
// name and sleeps in it (state S): its exec has then ended. The kernel
// shows a new name and executable early in an exec and the address
// space's layout only at its end (the break's start moved last, under
// randomization), so a test that pins or inspects a process it has just
// started would otherwise read it halfway and see it change afterwards.
// For programs such as sleep(1), which sleep as soon as they start.
func WaitSleeping(t testing.TB, pid int, name string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if err == nil && open >= 0 && end > open && end+2 < len(b) &&
			string(b[open+1:end]) == name && b[end+2] == 'S' {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d never slept in %s: %q, %v", pid, name, b, err)
		}
	}
}

// Running reports whether the real process pid runs: a zombie, dead
// and waiting for its parent (or init) to reap it, does not.
func Running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	end := bytes.LastIndexByte(b, ')')
	return err == nil && end >= 0 && end+2 < len(b) && b[end+2] != 'Z' && b[end+2] != 'X'
}
