package procid

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The connections of one process share its pin: each costs its socket,
// the pin four descriptors in all; the last to close releases it.
func TestConnectionsOfOneProcessShareAPin(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const n = 50
	before := len(openFDs(t))
	var peers []*Peer
	var conns []net.Conn
	for range n {
		c, s := dialAccept(t, l, sock)
		p, err := Host.PeerOf(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Verify(); err != nil {
			t.Fatal(err)
		}
		peers, conns = append(peers, p), append(conns, c, s)
	}
	if got, want := len(openFDs(t))-before, 2*n+4; got != want {
		t.Fatalf("%d connections of one process hold %d descriptors, want %d", n, got, want)
	}
	for _, p := range peers[:n-1] {
		p.Close()
	}
	if err := peers[n-1].Verify(); err != nil {
		t.Fatalf("the last user of the shared pin: %v", err)
	}
	peers[n-1].Close()
	peers[n-1].Close() // closing twice releases once
	for _, c := range conns {
		c.Close()
	}
	if got := len(openFDs(t)); got != before {
		t.Fatalf("%d descriptors open after every peer closed, %d before", got, before)
	}
}

// A connection made after the process executed a new program gets a pin
// of its own; the one made before finds the change.
func TestNoSharedPinAcrossAnExec(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, first := connectClient(t, l, sock, "execconnect", os.Args[0])
	before, err := Host.PeerOf(first)
	if err != nil {
		t.Fatal(err)
	}
	defer before.Close()
	var b [1]byte
	first.Read(b[:])
	first.Write([]byte{1}) // the client execs itself, and connects again
	l.SetDeadline(time.Now().Add(time.Minute))
	second, err := l.AcceptUnix()
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	after, err := Host.PeerOf(second)
	if err != nil {
		t.Fatal(err)
	}
	defer after.Close()
	if after.pin.(*pinRef).sharedPin == before.pin.(*pinRef).sharedPin {
		t.Fatal("the connection after the exec shares the pin of the one before")
	}
	if err := after.Verify(); err != nil {
		t.Fatalf("the new program's connection: %v", err)
	}
	if err := before.Verify(); !errors.Is(err, ErrChanged) {
		t.Fatalf("the old program's connection: %v", err)
	}
}

// A shared pin is found by pidfs inode where the kernel numbers each
// process once (no /proc read at connect), and by start time elsewhere;
// either way the connections of one process share it and another
// process's connection does not.
func TestSharedPinKeys(t *testing.T) {
	real := uniquePidfsInodes()
	t.Cleanup(func() { uniquePidfsInodes = func() bool { return real } })
	for _, byIno := range []bool{real, false} {
		uniquePidfsInodes = func() bool { return byIno }
		sock := filepath.Join(t.TempDir(), "s")
		l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		var own []*Peer
		for range 2 {
			c, err := net.Dial("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			s, err := l.AcceptUnix()
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			p, err := Host.PeerOf(s)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			own = append(own, p)
		}
		_, oc := connectClient(t, l, sock, "sleeping-connected", os.Args[0])
		other, err := Host.PeerOf(oc)
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		a, b, o := own[0].pin.(*pinRef).sharedPin, own[1].pin.(*pinRef).sharedPin, other.pin.(*pinRef).sharedPin
		if a != b {
			t.Fatalf("keyed by ino %v: two connections of this process have pins of their own", byIno)
		}
		if o == a {
			t.Fatalf("keyed by ino %v: another process's connection shares this process's pin", byIno)
		}
		if k := a.key; byIno != (k.ino != 0 && k.start == 0) || !byIno && k.start != own[0].StartTicks {
			t.Fatalf("keyed by ino %v: key %+v", byIno, k)
		}
	}
}

// The kernel hands over, with a connection, a pidfd for the process that
// connected, even once its pid names another. Where a shared pin is found
// by pid and start time, a connection whose process has exited, its pid
// since taken by a process whose pin is shared, is not that process's.
func TestSharedPinNotForAnExitedConnector(t *testing.T) {
	real := uniquePidfsInodes()
	t.Cleanup(func() { uniquePidfsInodes = func() bool { return real } })
	uniquePidfsInodes = func() bool { return false }
	sock := filepath.Join(t.TempDir(), "s")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// This process holds a shared pin: the one whose pid was reused.
	_, s := dialAccept(t, l, sock)
	own, err := Host.PeerOf(s)
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	// The connector: a pidfd for a process that has exited.
	cmd := exec.Command("/bin/true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.PidfdOpen(cmd.Process.Pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	pn, err := newPidfdPin(fd)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Host.finish(os.Getpid(), uint32(os.Getuid()), true, pn)
	if err == nil {
		p.Close()
		t.Fatal("a connection of an exited process was taken for the live process at its pid")
	}
	if !errors.Is(err, ErrGone) {
		t.Fatalf("err = %v, want ErrGone", err)
	}
}
