package e2e

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/postern/postern/internal/procid/proctest"
)

// A command a login of the test's sshd left running (here on purpose, in
// the tests by a connection cut off) ends with the test's sshd, not 300
// seconds later, outside any test.
func TestSSHDStopEndsWhatItsLoginsLeft(t *testing.T) {
	need(t, "ssh")
	e := newEnv(t)
	k := e.Keygen("k", "ed25519", 0, "")
	sshd := startSSHD(t, pubKey(t, k)+"\n")
	r := e.MustRun("ssh", sshd.SSHArgs("-o", "IdentitiesOnly=yes", "-o", "IdentityFile="+k, sshd.Target(), "sleep 300 </dev/null >/dev/null 2>&1 & echo $!")...)
	pid, err := strconv.Atoi(strings.TrimSpace(r.Stdout))
	if err != nil {
		t.Fatalf("the login printed %q", r.Stdout)
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatalf("the command the login left: %v", err)
	}
	defer unix.Close(fd)
	// The shell's child, which may not have executed sleep yet.
	proctest.WaitSleeping(t, pid, "sleep")
	sshd.Stop()
	// A pidfd polls readable once its process has exited.
	if n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 10_000); n != 1 || err != nil {
		unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		t.Fatalf("the command the login left still runs 10 s after its sshd stopped (poll %d, %v)", n, err)
	}
}

// killLeftBy kills every process whose environment has HOME=home: what a
// test's sshd logins left running (a command cut off with its connection,
// which sshd does not signal without a terminal), since sshd's SetEnv
// gives them that HOME and nothing else has it. Each is held by a pidfd
// before its environment is read, so the kill reaches the process read
// or none.
func killLeftBy(home string) {
	want := []byte("HOME=" + home)
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue
		}
		env, _ := os.ReadFile("/proc/" + p.Name() + "/environ")
		if bytes.Contains(append([]byte{0}, env...), append(append([]byte{0}, want...), 0)) {
			unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		}
		unix.Close(fd)
	}
}
