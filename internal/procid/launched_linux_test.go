package procid_test

import (
	"errors"
	"os/exec"
	"testing"
	"time"

	"github.com/postern/postern/internal/procid"
	"github.com/postern/postern/internal/procid/proctest"
)

// A process its parent has just launched may still be in its exec: its
// layout is not yet the one it keeps. Pinned then, it would fail its next
// check as a new program; PinLaunched waits for the exec to end.
func TestPinLaunchedWaitsForTheExec(t *testing.T) {
	f := proctest.New(t)
	exe := f.Exe("agent", "agent v1")
	f.Set(50, 1, 100, exe, "agent")
	finish := f.Executing(50)
	early, err := f.Table.Pin(50)
	if err != nil {
		t.Fatal(err)
	}
	defer early.Close()
	go func() {
		time.Sleep(30 * time.Millisecond)
		finish()
	}()
	p, err := f.Table.PinLaunched(50)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Verify(); err != nil {
		t.Fatalf("pinned once its exec ended: %v", err)
	}
	// What Pin alone saw mid-exec is taken for another program.
	if err := early.Verify(); !errors.Is(err, procid.ErrChanged) {
		t.Fatalf("pinned mid-exec: %v", err)
	}
	// A real process, started and pinned at once, many times.
	for i := 0; i < 50; i++ {
		cmd := exec.Command("sleep", "5")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		p, err := procid.Host.PinLaunched(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		err = p.Verify()
		p.Close()
		cmd.Process.Kill()
		cmd.Wait()
		if err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
	}
}

// A launched process that exits during its exec (a zombie its parent
// has not reaped yet) is not waited for.
func TestPinLaunchedExited(t *testing.T) {
	f := proctest.New(t)
	f.Set(50, 1, 100, f.Exe("agent", "agent v1"), "agent")
	f.Executing(50)
	// Were it waited for, it would be for an hour.
	defer procid.SetLaunchSettle(time.Hour)()
	done := make(chan struct{})
	go func() {
		if p, err := f.Table.PinLaunched(50); err == nil {
			p.Close()
		}
		close(done)
	}()
	time.Sleep(20 * time.Millisecond)
	f.Zombie(50)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("PinLaunched waits for a process that has exited")
	}
}
