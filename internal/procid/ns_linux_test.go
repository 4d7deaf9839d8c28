package procid

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startConfined starts sh in new user, pid and mount namespaces mapped to
// this uid and gid, as postern run does, with a sleep below it; it
// returns the shell's and the sleep's pids as this process sees them.
func startConfined(t *testing.T) (shell, child int) {
	t.Helper()
	cmd := exec.Command("sh", "-c", "sleep 60 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:                 syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID | syscall.CLONE_NEWNS,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}},
		GidMappingsEnableSetgroups: false,
		Pdeathsig:                  syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting a process in new namespaces: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	shell = cmd.Process.Pid
	children := "/proc/" + strconv.Itoa(shell) + "/task/" + strconv.Itoa(shell) + "/children"
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(children)
		if f := strings.Fields(string(b)); len(f) > 0 {
			child, _ = strconv.Atoi(f[0])
			return shell, child
		}
		if time.Now().After(deadline) {
			t.Fatal("the confined shell started no child")
		}
	}
}

func pinned(t *testing.T, pid int) *Peer {
	t.Helper()
	p, err := Host.Pin(pid)
	if err != nil {
		t.Fatalf("pin %d: %v", pid, err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// A confined run's processes are told apart from the processes outside
// it by their namespaces: a process of the run (the shell, or one it
// started) is inside the run's namespaces and inside this process's (the
// run's are nested in them); this process is inside none of the run's.
func TestNamespacesOfAConfinedRun(t *testing.T) {
	own, err := OwnNamespaces()
	if err != nil {
		t.Fatal(err)
	}
	var self syscall.Stat_t
	if err := syscall.Stat("/proc/self/ns/user", &self); err != nil || self.Ino != own.User {
		t.Fatalf("OwnNamespaces user %d, /proc/self/ns/user inode %d (%v)", own.User, self.Ino, err)
	}
	shellPID, childPID := startConfined(t)
	shell, child, me := pinned(t, shellPID), pinned(t, childPID), pinned(t, os.Getpid())

	run, err := shell.Namespaces()
	if err != nil {
		t.Fatal(err)
	}
	if run.User == own.User || run.PID == own.PID || run.Mnt == own.Mnt {
		t.Fatalf("the run's namespaces %+v share one with this process's %+v", run, own)
	}
	if got, err := child.Namespaces(); err != nil || got != run {
		t.Fatalf("the shell's child: %+v (%v), want the run's %+v", got, err, run)
	}
	for _, c := range []struct {
		name string
		p    *Peer
		ns   Namespaces
		want bool
	}{
		{"the shell in the run's", shell, run, true},
		{"the shell's child in the run's", child, run, true},
		{"the shell in this process's (nested)", shell, own, true},
		{"this process in the run's", me, run, false},
		{"this process in its own", me, own, true},
	} {
		if got, err := c.p.InNamespaces(c.ns); err != nil || got != c.want {
			t.Errorf("%s: InNamespaces = %v (%v), want %v", c.name, got, err, c.want)
		}
	}
	// Only the mount namespace: a process in the run's mount namespace is
	// inside, whatever its other namespaces.
	if got, err := me.InNamespaces(Namespaces{User: run.User, PID: run.PID, Mnt: own.Mnt}); err != nil || !got {
		t.Errorf("this process against its own mount namespace: %v (%v)", got, err)
	}

	if uid, err := shell.NamespaceOwner(); err != nil || uid != os.Getuid() {
		t.Errorf("the run's user namespace owner: %d (%v), want %d", uid, err, os.Getuid())
	}
	for _, c := range []struct {
		pid, want int
	}{{os.Getpid(), 0}, {shellPID, 1}, {childPID, 1}} {
		if d, err := Host.PIDNamespaceDepth(c.pid); err != nil || d != c.want {
			t.Errorf("pid %d: depth %d (%v), want %d", c.pid, d, err, c.want)
		}
	}

	// Once the process is gone, nothing is read for its pid: the pin says
	// so rather than another process's namespaces.
	syscall.Kill(childPID, syscall.SIGKILL)
	for deadline := time.Now().Add(20 * time.Second); child.Alive(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the child did not die")
		}
	}
	if _, err := child.Namespaces(); err == nil {
		t.Error("Namespaces of a dead process succeeded")
	}
	if _, err := child.InNamespaces(run); err == nil {
		t.Error("InNamespaces of a dead process succeeded")
	}
}

// A table over a fake /proc reads NSpid as it is written, and says when
// the line is missing.
func TestPIDNamespaceDepthFromStatus(t *testing.T) {
	dir := t.TempDir()
	write := func(pid, status string) {
		os.MkdirAll(dir+"/"+pid, 0o700)
		os.WriteFile(dir+"/"+pid+"/status", []byte(status), 0o600)
	}
	write("10", "Name:\tsh\nNSpid:\t10\t1\nPPid:\t1\n")
	write("11", "Name:\tsh\nNSpid:\t11\t7\t1\n")
	write("12", "Name:\told kernel\n")
	tb := &Table{Root: dir}
	for _, c := range []struct {
		pid, want int
		ok        bool
	}{{10, 1, true}, {11, 2, true}, {12, 0, false}} {
		d, err := tb.PIDNamespaceDepth(c.pid)
		if (err == nil) != c.ok || d != c.want {
			t.Errorf("pid %d: %d (%v)", c.pid, d, err)
		}
	}
}
