package procid

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
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
	// The exe link names sleep from early in the exec; the layout is
	// filled at its end (the break's start moved last): wait until sleep
	// sleeps, or the two reads below may straddle the exec's end.
	var want Process
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		var err error
		want, err = Host.Inspect(pid)
		stat, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err == nil && filepath.Base(want.Exe.Path) == "sleep" && bytes.Contains(stat, []byte(") S ")) {
			if want, err = Host.Inspect(pid); err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("setpriv never finished executing sleep: %+v, %v, %q", want, err, stat)
		}
	}
	got, err := Host.inspectParent(pid)
	if err != nil || got != want {
		t.Fatalf("inspectParent: %+v, %v\nInspect:       %+v", got, err, want)
	}
	if got.UID != 65534 {
		t.Fatalf("uid %d, want the real uid 65534", got.UID)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if _, err := Host.inspectParent(pid); !errors.Is(err, ErrGone) {
		t.Fatalf("a process that was reaped: %v, want ErrGone", err)
	}
}
