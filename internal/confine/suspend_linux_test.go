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
