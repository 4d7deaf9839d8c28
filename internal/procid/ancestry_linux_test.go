package procid_test

import (
	"errors"
	"os/exec"
	"testing"

	"github.com/postern/postern/internal/procid"
	"github.com/postern/postern/internal/procid/proctest"
)

// An ancestry walk's inspection of a parent, held by a pidfd, reads what
// Inspect reads: its real uid too (here not its effective one), and a
// process that is gone is reported gone.
func TestInspectParentReadsWhatInspectReads(t *testing.T) {
	cmd := exec.Command("setpriv", "--ruid", "65534", "--euid", "0", "sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	pid := cmd.Process.Pid
	proctest.WaitSleeping(t, pid, "sleep")
	want, err := procid.Host.Inspect(pid)
	if err != nil {
		t.Fatal(err)
	}
	got, err := procid.Host.InspectParent(pid)
	if err != nil || got != want {
		t.Fatalf("inspectParent: %+v, %v\nInspect:       %+v", got, err, want)
	}
	if got.UID != 65534 {
		t.Fatalf("uid %d, want the real uid 65534", got.UID)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if _, err := procid.Host.InspectParent(pid); !errors.Is(err, procid.ErrGone) {
		t.Fatalf("a process that was reaped: %v, want ErrGone", err)
	}
}
