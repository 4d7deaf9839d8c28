package confine

import (
	"os/exec"
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
	if stoppedOrGone(pid) {
		t.Fatal("a sleeping process counted as stopped")
	}
	syscall.Kill(pid, syscall.SIGSTOP)
	deadline := time.Now().Add(5 * time.Second)
	for !stoppedOrGone(pid) {
		if time.Now().After(deadline) {
			t.Fatal("a stopped process not seen stopped")
		}
		time.Sleep(time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if !stoppedOrGone(pid) {
		t.Fatal("a reaped process counted as running")
	}
}
