package park

import (
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// pair returns the two ends of a connected UNIX stream socket.
func pair(t testing.TB) (server, client *net.UnixConn) {
	t.Helper()
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: t.TempDir() + "/s", Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	client, err = net.DialUnix("unix", nil, l.Addr().(*net.UnixAddr))
	if err != nil {
		t.Fatal(err)
	}
	server, err = l.AcceptUnix()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close(); client.Close() })
	return server, client
}

// woken waits for ch, and reports (as an error) a wake-up that has not
// come after a minute: only a lost one takes that long.
func woken(t *testing.T, ch <-chan struct{}, what string) bool {
	t.Helper()
	select {
	case <-ch:
		return true
	case <-time.After(time.Minute):
		t.Errorf("%s: not woken", what)
		return false
	}
}

// mustWake is woken on the test's goroutine: it stops the test.
func mustWake(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	if !woken(t, ch, what) {
		t.FailNow()
	}
}

func TestWakeOnData(t *testing.T) {
	var lot Lot
	srv, cl := pair(t)
	ch := make(chan struct{}, 1)
	spot, err := lot.Spot(srv, func() { ch <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		if !spot.Park() {
			t.Fatal("not parked")
		}
		if lot.Parked() != 1 {
			t.Fatalf("round %d: %d parked", round, lot.Parked())
		}
		cl.Write([]byte{byte(round)})
		mustWake(t, ch, "data")
		// Woken, it has left: the caller owns the connection.
		if spot.Leave() || lot.Parked() != 0 {
			t.Fatalf("round %d: still parked after the wake-up", round)
		}
		var b [1]byte
		if _, err := io.ReadFull(srv, b[:]); err != nil || b[0] != byte(round) {
			t.Fatalf("round %d: read %v %v", round, b, err)
		}
	}
}

// A connection parked with data already waiting is woken at once; one
// whose peer went away is woken too, and its read finds the end.
func TestWakeOnPendingDataAndEnd(t *testing.T) {
	var lot Lot
	srv, cl := pair(t)
	cl.Write([]byte("x"))
	ch := make(chan struct{}, 1)
	spot, _ := lot.Spot(srv, func() { ch <- struct{}{} })
	spot.Park()
	mustWake(t, ch, "pending data")
	srv.Read(make([]byte, 1))
	spot.Park()
	cl.Close()
	mustWake(t, ch, "end of the connection")
	if _, err := srv.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("read after the peer closed: %v", err)
	}
}

// A connection taken back by Leave is never woken for that Park, and a
// new connection on the same descriptor number wakes only its own Spot.
func TestLeave(t *testing.T) {
	var lot Lot
	srv, cl := pair(t)
	var stale atomic.Int32
	spot, _ := lot.Spot(srv, func() { stale.Add(1) })
	if !spot.Park() {
		t.Fatal("not parked")
	}
	if !spot.Leave() {
		t.Fatal("Leave of a parked Spot reported false")
	}
	if spot.Leave() {
		t.Fatal("a second Leave reported true")
	}
	cl.Write([]byte("x"))
	srv.Close()
	cl.Close()

	srv2, cl2 := pair(t)
	ch := make(chan struct{}, 1)
	spot2, _ := lot.Spot(srv2, func() { ch <- struct{}{} })
	spot2.Park()
	cl2.Write([]byte("y"))
	mustWake(t, ch, "the new connection")
	if n := stale.Load(); n != 0 {
		t.Fatalf("the Spot that left was woken %d times", n)
	}
}

// Parked connections hold no goroutine: a thousand of them add none
// beyond the Lot's one watcher.
func TestParkedHoldNoGoroutine(t *testing.T) {
	var lot Lot
	srv, _ := pair(t)
	first, _ := lot.Spot(srv, func() {})
	first.Park() // starts the watcher
	before := runtime.NumGoroutine()
	var clients []*net.UnixConn
	for range 1000 {
		s, c := pair(t)
		clients = append(clients, c)
		spot, _ := lot.Spot(s, func() {})
		if !spot.Park() {
			t.Fatal("not parked")
		}
	}
	if n := runtime.NumGoroutine() - before; n > 10 {
		t.Fatalf("1,000 parked connections added %d goroutines", n)
	}
	if lot.Parked() != 1001 {
		t.Fatalf("%d parked", lot.Parked())
	}
}

// Many connections parked and woken at once, over and over: no wake-up
// is lost and none comes twice.
func TestNoLostWakeups(t *testing.T) {
	const conns, rounds = 64, 300
	var lot Lot
	var wg sync.WaitGroup
	for range conns {
		srv, cl := pair(t)
		wakes := make(chan struct{}, 2)
		spot, _ := lot.Spot(srv, func() { wakes <- struct{}{} })
		wg.Go(func() {
			var b [1]byte
			for r := range rounds {
				if !spot.Park() {
					t.Error("not parked")
					return
				}
				go cl.Write([]byte{byte(r)})
				if !woken(t, wakes, "a round") {
					return
				}
				if _, err := io.ReadFull(srv, b[:]); err != nil || b[0] != byte(r) {
					t.Errorf("round %d: %v %v", r, b, err)
					return
				}
				if len(wakes) != 0 {
					t.Error("woken twice")
					return
				}
			}
		})
	}
	wg.Wait()
}

// registered counts the registrations of descriptor fd in the Lot's epoll
// set (/proc/self/fdinfo of the set lists one "tfd:" line for each).
func registered(t *testing.T, l *Lot, fd int) int {
	t.Helper()
	l.mu.Lock()
	epfd := l.poll.fd
	l.mu.Unlock()
	b, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(epfd))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "tfd:" && f[1] == strconv.Itoa(fd) {
			n++
		}
	}
	return n
}

// A Spot made Bare parks the bare descriptor and is woken by data on it;
// once woken, the descriptor is out of the set, so that closing it (the
// socket still open through another descriptor) leaves nothing behind:
// the Spot, parked again through its connection, is woken once for the
// next data, not for the old descriptor's registration. Leave takes a
// bare descriptor out of the set too.
func TestBareDescriptor(t *testing.T) {
	var lot Lot
	srv, cl := pair(t)
	ch := make(chan struct{}, 4)
	spot, err := lot.Spot(srv, func() { ch <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	f, err := srv.File() // another descriptor of the socket
	if err != nil {
		t.Fatal(err)
	}
	spot.Bare(int(f.Fd()))
	if !spot.Park() {
		t.Fatal("a bare descriptor was not parked")
	}
	cl.Write([]byte{1})
	mustWake(t, ch, "bare descriptor")
	if n := registered(t, &lot, int(f.Fd())); n != 0 {
		t.Fatalf("the woken bare descriptor is still in the epoll set (%d)", n)
	}
	f.Close()
	if _, err := io.ReadFull(srv, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	if err := spot.Conn(srv); err != nil {
		t.Fatal(err)
	}
	if !spot.Park() {
		t.Fatal("the connection was not parked again")
	}
	cl.Write([]byte{2})
	mustWake(t, ch, "connection after the bare descriptor")
	select {
	case <-ch:
		t.Fatal("woken twice for one request: the closed descriptor stayed in the set")
	case <-time.After(50 * time.Millisecond):
	}

	g, err := srv.File()
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	io.ReadFull(srv, make([]byte, 1))
	spot.Bare(int(g.Fd()))
	if !spot.Park() || !spot.Leave() {
		t.Fatal("a parked bare descriptor did not leave")
	}
	cl.Write([]byte{3})
	select {
	case <-ch:
		t.Fatal("woken after Leave")
	case <-time.After(50 * time.Millisecond):
	}
}
