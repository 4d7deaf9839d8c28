package askpass

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/postern/postern/internal/procid/proctest"
)

// A card answered elsewhere, or timed out, takes its dialog away: a
// script that runs its dialog as a child (a zenity script: sh, then
// zenity) leaves no dialog behind on the screen, still asking about a
// card that is gone.
func TestCancelledDialogLeavesNoChild(t *testing.T) {
	dir := t.TempDir()
	pidfile := filepath.Join(dir, "dialog.pid")
	prog := filepath.Join(dir, "askpass")
	os.WriteFile(prog, []byte("#!/bin/sh\nsleep 300 &\necho $! > "+pidfile+"\nwait\n"), 0o755)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Pin(Env{"SSH_ASKPASS=" + prog, "SSH_ASKPASS_REQUIRE=force"}, nil).Confirm(ctx, "x")
	}()
	var pid int
	for deadline := time.Now().Add(10 * time.Second); pid == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the dialog did not start")
		}
		b, _ := os.ReadFile(pidfile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled question did not end")
	}
	for deadline := time.Now().Add(5 * time.Second); proctest.Running(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the dialog (pid %d) outlived its cancelled question", pid)
		}
	}
}
