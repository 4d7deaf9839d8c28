package e2e

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/postern/postern/internal/fataltest"
)

// A command that exits and leaves a process behind that holds its
// output (a daemon that kept stdout) fails the test that ran it, naming
// the command, instead of keeping the test waiting for as long as that
// process lives.
func TestRunOfACommandThatLeavesItsOutputHeldFails(t *testing.T) {
	mostlyWaits(t)
	e := newEnv(t)
	pidFile := e.Path("left.pid")
	t.Cleanup(func() {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(mustRead(t, pidFile)))); err == nil {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	done := make(chan string, 1)
	go func() {
		done <- fataltest.Run(t, func(t testing.TB) {
			e.t = t
			e.Run("sh", "-c", "sleep 600 & echo $! > "+pidFile+"; echo started")
		})
	}()
	var msg string
	select {
	case msg = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("Run still waits, 60s after the command exited, for the process it left holding its output")
	}
	if !strings.Contains(msg, "left a process") || !strings.Contains(msg, "sleep 600") {
		t.Fatalf("Run of a command that left its output held said %q", msg)
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
	var ran *Result
	msg := fataltest.Run(t, func(t testing.TB) {
		e.t = t
		r := e.Run("ssh", "-G", "somehost")
		ran = &r
	})
	if ran != nil {
		t.Fatalf("ssh -G somehost ran, reading the runner's ~/.ssh/config: %s", ran)
	}
	if !strings.Contains(msg, "give it -F") {
		t.Fatalf("Run of ssh without -F said %q", msg)
	}
}
