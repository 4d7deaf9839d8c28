package procid_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

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

// A process that left root's tree (its parent exited, and it was given to
// another) is not within root while it lives; once it has exited, before
// it is reaped, it is gone (ErrGone): a requester that died is not taken
// for one that left a run to pass for another's.
func TestWithinAnExitedProcessIsGone(t *testing.T) {
	// Orphans come to this process, which reaps none of them meanwhile:
	// an exited orphan stays a zombie here, not outside root's tree.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	defer unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	// root (sh) runs a shell that starts child (sleep) and exits when
	// told, and then waits.
	cmd := exec.Command("sh", "-c", `sh -c 'sleep 600 & echo $!; read x'; sleep 600`)
	// In a group of its own, which goes whole at the end: its last
	// sleep is a child of root's.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	var pid int
	if _, err := fmt.Fscan(out, &pid); err != nil {
		t.Fatal(err)
	}
	defer unix.Wait4(pid, nil, 0, nil)
	defer unix.Kill(pid, unix.SIGKILL)
	root, err := procid.Host.Pin(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	child, err := procid.Host.Pin(pid)
	if err != nil {
		t.Fatal(err)
	}
	defer child.Close()
	if ok, err := child.Within(root); !ok || err != nil {
		t.Fatalf("the child, its parent alive: Within = %v, %v", ok, err)
	}
	in.Write([]byte("\n")) // its parent exits
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if st, err := procid.Host.Stat(pid); err == nil && st.PPID == os.Getpid() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the child was not given to this process")
		}
	}
	if ok, err := child.Within(root); ok || err != nil {
		t.Fatalf("the child, alive, given to another: Within = %v, %v; want false", ok, err)
	}
	unix.Kill(pid, unix.SIGKILL)
	<-child.Exited()
	if _, err := procid.Host.Stat(pid); err != nil {
		t.Fatalf("the exited child is no longer there to read (%v): the test shows nothing", err)
	}
	if ok, err := child.Within(root); ok || !errors.Is(err, procid.ErrGone) {
		t.Fatalf("the child, exited and not reaped: Within = %v, %v; want ErrGone", ok, err)
	}
}
