package main

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A command the gateway did not register is stopped. One still running
// is killed, and postern run reports the gateway's refusal; one that
// ended on its own, however late, ran: postern run passes its exit
// status on, as it would have once registered. (The gateway can find a
// command gone while it is still exiting, before its parent is told:
// how it ended is read after the kill, not peeked at before it.)
func TestStopAnUnregisteredCommand(t *testing.T) {
	start := func(script string) plainRun {
		t.Helper()
		l, err := startPlain("/bin/sh", []string{"sh", "-c", script}, os.Environ())
		if err != nil {
			t.Fatal(err)
		}
		return l.(plainRun)
	}
	running := start("sleep 30")
	if ended, err := running.stop(); ended || err != nil {
		t.Errorf("a running command the gateway did not register: ended %v, %v; want it killed", ended, err)
	}
	for _, code := range []int{0, 3} {
		l := start("exit " + strconv.Itoa(code))
		waitZombie(t, l.pid())
		ended, err := l.stop()
		var ee *exitError
		switch {
		case !ended:
			t.Errorf("a command that ended with status %d was taken for one killed", code)
		case code == 0 && err != nil, code != 0 && (!errors.As(err, &ee) || ee.code != code):
			t.Errorf("a command that ended with status %d: %v", code, err)
		}
	}
}

// waitZombie waits until the child pid has exited and is not yet reaped.
func waitZombie(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			t.Fatal(err)
		}
		if _, rest, ok := strings.Cut(string(b), ") "); ok && strings.HasPrefix(rest, "Z") {
			return
		}
	}
	t.Fatalf("pid %d did not exit", pid)
}
