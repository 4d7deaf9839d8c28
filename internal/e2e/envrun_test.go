package e2e

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fatalRecorder is a test whose Fatalf is recorded and ends the
// goroutine that called it, as testing's does.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// A command that exits and leaves a process behind that holds its
// output (a daemon that kept stdout) fails the test that ran it, naming
// the command, instead of keeping the test waiting for as long as that
// process lives.
func TestRunOfACommandThatLeavesItsOutputHeldFails(t *testing.T) {
	e := newEnv(t)
	rec := &fatalRecorder{TB: t}
	e.t = rec
	pidFile := e.Path("left.pid")
	t.Cleanup(func() {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(mustRead(t, pidFile)))); err == nil {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.Run("sh", "-c", "sleep 600 & echo $! > "+pidFile+"; echo started")
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("Run still waits, 60s after the command exited, for the process it left holding its output")
	}
	if !strings.Contains(rec.msg, "left a process") || !strings.Contains(rec.msg, "sleep 600") {
		t.Fatalf("Run of a command that left its output held said %q", rec.msg)
	}
	if _, err := os.Stat(pidFile); err != nil {
		t.Fatal(err)
	}
}

// ssh run without a configuration file of the test's (-F) is refused
// before it runs: it would read the runner's ~/.ssh/config.
func TestSSHWithoutAConfigFileIsRefused(t *testing.T) {
	need(t, "ssh")
	e := newEnv(t)
	rec := &fatalRecorder{TB: t}
	e.t = rec
	var ran *Result
	done := make(chan struct{})
	go func() {
		defer close(done)
		r := e.Run("ssh", "-G", "somehost")
		ran = &r
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("ssh -G did not finish")
	}
	if ran != nil {
		t.Fatalf("ssh -G somehost ran, reading the runner's ~/.ssh/config: %s", ran)
	}
	if !strings.Contains(rec.msg, "give it -F") {
		t.Fatalf("Run of ssh without -F said %q", rec.msg)
	}
}
