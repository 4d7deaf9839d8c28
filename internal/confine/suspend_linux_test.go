package confine

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestStoppedOrGone(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if stoppedOrGone(pid) || stopped(pid) {
		t.Fatal("a sleeping process counted as stopped")
	}
	syscall.Kill(pid, syscall.SIGSTOP)
	deadline := time.Now().Add(5 * time.Second)
	for !stoppedOrGone(pid) || !stopped(pid) {
		if time.Now().After(deadline) {
			t.Fatal("a stopped process not seen stopped")
		}
		time.Sleep(time.Millisecond)
	}
	cmd.Process.Kill()
	for procState(pid) != 'Z' {
		if time.Now().After(deadline) {
			t.Fatal("a killed process not seen a zombie")
		}
		time.Sleep(time.Millisecond)
	}
	if !stoppedOrGone(pid) || stopped(pid) {
		t.Fatal("a zombie counted as running, or as stopped")
	}
	cmd.Wait()
	if !stoppedOrGone(pid) || stopped(pid) {
		t.Fatal("a reaped process counted as running, or as stopped")
	}
}

// everyStopped reads each thread of each process but the first (the
// helper), in a fake proc tree.
func TestEveryStopped(t *testing.T) {
	root := t.TempDir()
	thread := func(pid, tid int, state byte) {
		dir := filepath.Join(root, fmt.Sprint(pid), "task", fmt.Sprint(tid))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		stat := fmt.Sprintf("%d (a (b) c) %c 1 %d %d 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 4242 0 0\n", tid, state, pid, pid)
		if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink("1", filepath.Join(root, "self"))
	thread(1, 1, 'S') // the helper, which goes on
	thread(2, 2, 'T')
	thread(3, 3, 'Z')
	thread(4, 4, 't')
	if !everyStopped(root) {
		t.Fatal("a run stopped, but for its helper, not seen stopped")
	}
	for _, running := range []byte("RDS") {
		thread(2, 5, running) // a thread of a stopped process
		if everyStopped(root) {
			t.Fatalf("a thread in state %c counted as stopped", running)
		}
	}
	thread(2, 5, 'T')
	os.MkdirAll(filepath.Join(root, "6", "task"), 0o755) // ended as it was read
	if !everyStopped(root) {
		t.Fatal("a run stopped whole not seen stopped")
	}
}
