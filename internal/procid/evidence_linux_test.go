package procid

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// racingPin is a pin whose reads find the process unchanged while its
// liveness check finds it gone: what a process that exits (and whose pid
// is taken by another) between the reads and the check looks like.
type racingPin struct {
	startPin
	look0 error
	ino0  uint64
}

func (r *racingPin) look(t *Table, p *Process) (Stat, exeKey, error) {
	return Stat{StartTicks: p.StartTicks, PPID: 1}, exeKey{}, r.look0
}
func (*racingPin) alive(_ *Table, p *Process) error { return fmt.Errorf("pid %d: %w", p.PID, ErrGone) }
func (r *racingPin) ino() uint64                    { return r.ino0 }

// Verify believes its reads only when the process is alive after them.
func TestVerifyChecksAliveAfterTheReads(t *testing.T) {
	for _, read := range []error{nil, fmt.Errorf("pid 7: %w", ErrChanged)} {
		p := &Peer{Process: Process{PID: 7, StartTicks: 70}, table: Host, pin: &racingPin{look0: read}}
		if err := p.Verify(); !errors.Is(err, ErrGone) {
			t.Fatalf("reads %v, then gone: Verify = %v, want ErrGone", read, err)
		}
	}
}

// A connection identified from the pin shared with the process's earlier
// connections is not identified when the process is gone after the
// pin's reads.
func TestSharedPinChecksAliveAfterTheReads(t *testing.T) {
	if !uniquePidfsInodes() {
		t.Fatal("this kernel numbers no pidfds uniquely (Linux 6.9 and later do)")
	}
	tb := &Table{Root: Host.Root}
	proc := Process{PID: 7, StartTicks: 70, Exe: Exe{Hidden: true}}
	pn := &racingPin{ino0: 77}
	tb.share(pn, &proc, exeKey{})
	uid := uint32(0)
	if p := tb.shared(7, &uid, &racingPin{ino0: 77}); p != nil {
		t.Fatalf("a process gone after the shared pin's reads was identified: %+v", p.Process)
	}
}

// The connection a process makes after its parent exited is identified
// with its parent as it is then, though it shares the pin of the
// connection made before: what the shared pin reads is the process as it
// is now, not as it was when it was pinned.
func TestSharedPinSeesTheProcessAsItIsNow(t *testing.T) {
	l, sock := listenTemp(t)
	middle, first := connectClient(t, l, sock, "middle", os.Args[0])
	before := readyPeer(t, first)
	// Held by a pidfd: by the test's end the number may be another
	// process's.
	if p, err := os.FindProcess(before.PID); err == nil {
		t.Cleanup(func() { p.Kill() })
	}
	if before.PPID != middle.Process.Pid {
		t.Fatalf("first connection's parent %d, want %d", before.PPID, middle.Process.Pid)
	}
	middle.Process.Kill()
	middle.Wait()
	after := acceptPeer(t, l) // made once the client saw its parent go
	if after.pin.(*pinRef).sharedPin != before.pin.(*pinRef).sharedPin {
		t.Fatal("the second connection of the process has a pin of its own")
	}
	now, err := Host.Stat(after.PID)
	if err != nil {
		t.Fatal(err)
	}
	if after.PPID == middle.Process.Pid || after.PPID != now.PPID {
		t.Fatalf("second connection's parent %d, want %d (its parent %d is gone)", after.PPID, now.PPID, middle.Process.Pid)
	}
}

// readyPeer waits for the byte a client writes once connected on c, and
// identifies the client; the peer is closed when the test ends.
func readyPeer(t *testing.T, c *net.UnixConn) *Peer {
	t.Helper()
	var b [1]byte
	c.Read(b[:])
	p, err := Host.PeerOf(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// acceptPeer accepts the next connection on l and identifies its client
// as readyPeer does.
func acceptPeer(t *testing.T, l *net.UnixListener) *Peer {
	t.Helper()
	c, err := l.AcceptUnix()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return readyPeer(t, c)
}

// runMiddle starts the client that connects twice (connectTwice) and
// waits to be killed.
func runMiddle() {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "PROCID_TEST_MODE=twice")
	if cmd.Start() != nil {
		os.Exit(3)
	}
	time.Sleep(30 * time.Second)
	os.Exit(0)
}

// connectTwice connects and writes a byte, and, once its parent is gone,
// does it again.
func connectTwice(sock string) {
	parent := os.Getppid()
	for range 2 {
		c, err := net.Dial("unix", sock)
		if err != nil {
			os.Exit(3)
		}
		c.Write([]byte{1})
		for os.Getppid() == parent {
			time.Sleep(time.Millisecond)
		}
	}
	time.Sleep(30 * time.Second)
	os.Exit(0)
}

// A connection made after the executable's times changed is identified
// afresh, its hash taken of the file as it is now: the hash of the shared
// pin's process was taken of the file with other attributes.
func TestSharedPinAfterTheExecutableChanged(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "client")
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, self, 0o755); err != nil {
		t.Fatal(err)
	}
	l, sock := listenTemp(t)
	_, first := connectClient(t, l, sock, "touched", exe)
	before := readyPeer(t, first)
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(exe, later, later); err != nil {
		t.Fatal(err)
	}
	first.Write([]byte{1})
	after := acceptPeer(t, l)
	if after.pin.(*pinRef).sharedPin == before.pin.(*pinRef).sharedPin {
		t.Fatal("the connection after the executable changed took the hash found for the file before")
	}
	_, k, err := Host.ExeID(after.PID)
	if err != nil {
		t.Fatal(err)
	}
	if sum, ok := Host.cachedHash(k); !ok || sum != after.Exe.SHA256 || after.Exe.Hash() != before.Exe.Hash() {
		t.Fatalf("the executable as it is now was not hashed: %x %v", sum, ok)
	}
}

// The connections of a process whose executable could not be hashed (one
// the gateway may run but not read: mode 0111) share its pin too, found
// again by the executable's attributes, not by its hash: nothing a
// process does to its file makes each of its connections cost a pin of
// its own. Here the table's exe link names a directory, which stats but
// does not read.
func TestSharedPinOfAnUnhashedExecutable(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, strconv.Itoa(os.Getpid()))
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "stat"), stat, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), filepath.Join(dir, "exe")); err != nil {
		t.Fatal(err)
	}
	tb := &Table{Root: root}
	l, sock := listenTemp(t)
	var first *Peer
	for i := range 2 {
		_, s := dialAccept(t, l, sock)
		p, err := tb.PeerOf(s)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		if p.Exe.Hash() != "" {
			t.Fatalf("a directory was hashed: %s", p.Exe.Hash())
		}
		if i == 0 {
			first = p
		} else if p.pin.(*pinRef).sharedPin != first.pin.(*pinRef).sharedPin {
			t.Fatal("the second connection of a process whose executable has no hash has a pin of its own")
		}
	}
}
