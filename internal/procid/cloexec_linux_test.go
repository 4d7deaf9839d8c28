package procid

import (
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// Every descriptor a peer and the watch of its exit hold is closed on
// exec: none reaches the programs the gateway starts (askpass, a
// notifier), where the watch's copy of the peer's pidfd did.
func TestPeerDescriptorsAreClosedOnExec(t *testing.T) {
	before := openFDs(t)
	_, c := startClient(t, "exit")
	p, err := Host.PeerOf(c)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	stop := p.pin.watchExit(func() {})
	if stop == nil {
		t.Fatal("no watch")
	}
	defer stop()
	for fd := range openFDs(t) {
		if before[fd] {
			continue
		}
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err == nil && flags&unix.FD_CLOEXEC == 0 {
			target, _ := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
			t.Errorf("descriptor %d (%s) is not closed on exec", fd, target)
		}
	}
}

// openFDs lists this process's open descriptors.
func openFDs(t *testing.T) map[int]bool {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	fds := map[int]bool{}
	for _, e := range entries {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			fds[n] = true
		}
	}
	return fds
}
