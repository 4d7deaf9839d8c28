package sshagent

import (
	"net"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/postern/postern/internal/connlimit"
)

// An idle connection, new or between requests, holds no goroutine: a
// few hundred of them, each having made a request, add none. Each is
// still served when it sends its next request, and released when its
// client goes.
func TestIdleConnectionsHoldNoGoroutine(t *testing.T) {
	const n = 300
	limits := &connlimit.Limiter{}
	ts := startServerWith(t, func(s *Server) { s.Limits = limits; s.Log = discardLogger() })
	warm := ts.rawConn(t)
	listRaw(t, warm)
	waitFor(t, "the first connection to park", func() bool { return ts.srv.lot.Parked() == 1 })
	before := runtime.NumGoroutine()

	conns := make([]net.Conn, n)
	for i := range conns {
		conns[i] = ts.rawConn(t)
		if i%2 == 0 {
			listRaw(t, conns[i]) // half have made a request, half none
		}
	}
	waitFor(t, "the connections to park", func() bool { return ts.srv.lot.Parked() == n+1 })
	if extra := runtime.NumGoroutine() - before; extra > 20 {
		t.Fatalf("%d idle connections hold %d goroutines", n, extra)
	}
	for _, c := range conns {
		listRaw(t, c)
	}
	for _, c := range append(conns, warm) {
		c.Close()
	}
	waitFor(t, "the connections to be released", func() bool { return limits.Total() == 0 && ts.srv.lot.Parked() == 0 })
	done := make(chan struct{})
	go func() { ts.srv.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("Wait did not return once every client had gone")
	}
}

// A connection parked for a while gives up its net.Conn and keeps only a
// descriptor of its socket: each is still served when its next request
// comes (and made bare again after it), evicted to make room, and
// released when its client goes.
func TestLongIdleConnectionsGoBare(t *testing.T) {
	const n = 50
	limits := &connlimit.Limiter{PerUID: n}
	ts := startServerWith(t, func(s *Server) { s.Limits = limits; s.Log = discardLogger() })
	conns := make([]net.Conn, n)
	for i := range conns {
		conns[i] = ts.rawConn(t)
		listRaw(t, conns[i])
	}
	waitFor(t, "the connections to go bare", func() bool { return ts.srv.bare.n.Load() == n })
	for round := range 2 {
		for i, c := range conns {
			if round == 1 && i == 0 {
				continue // evicted below
			}
			listRaw(t, c)
			if round == 0 && i == 0 {
				// The first is idle the longest only once its request
				// has ended before the next one's: a reply wakes the
				// client, which may send the next request and have it
				// answered before this connection's goroutine is back
				// on a CPU. Its going bare again says it was.
				waitFor(t, "the first connection to go bare again", func() bool { return ts.srv.bare.n.Load() == n })
			}
		}
		waitFor(t, "the connections to go bare again", func() bool { return ts.srv.bare.n.Load() == n })
		if round == 0 {
			// One more connection: the one idle the longest, bare, is
			// closed to make room.
			extra := ts.rawConn(t)
			listRaw(t, extra)
			conns[0].SetReadDeadline(time.Now().Add(time.Minute))
			if _, err := conns[0].Read(make([]byte, 1)); err == nil || os.IsTimeout(err) {
				t.Fatalf("the connection idle the longest was not closed to make room (%v)", err)
			}
			conns = append(conns, extra)
		}
	}
	if got := limits.Total(); got != n {
		t.Fatalf("%d connections counted, want %d", got, n)
	}
	for _, c := range conns {
		c.Close()
	}
	waitFor(t, "the connections to be released", func() bool {
		return limits.Total() == 0 && ts.srv.lot.Parked() == 0 && ts.srv.bare.n.Load() == 0
	})
}

// A bare connection still checks who wrote each request: a request that
// another process (which inherited the client's socket) writes after the
// connection went bare closes the connection unanswered.
func TestBareConnectionRefusesAnotherWriter(t *testing.T) {
	ts := startServerWith(t, func(s *Server) { s.Log = discardLogger() })
	c := ts.rawConn(t)
	listRaw(t, c)
	waitFor(t, "the connection to go bare", func() bool { return ts.srv.bare.n.Load() == 1 })
	listFromAnotherProcess(t, c)
	c.SetReadDeadline(time.Now().Add(time.Minute))
	if n, err := c.Read(make([]byte, 64)); err == nil {
		t.Fatalf("answered (%d bytes) a request another process wrote", n)
	}
}

// Many connections that connect at once never keep many net.Conns: past
// maxDressed parked ones, those parked first go bare at once, long
// before bareAfter. Each is still served after.
func TestParkedConnectionsGoBarePastTheirNumber(t *testing.T) {
	const n = 3 * maxDressed
	ts := startServerWith(t, func(s *Server) { s.bare.after = time.Hour; s.Log = discardLogger() })
	conns := make([]net.Conn, n)
	for i := range conns {
		conns[i] = ts.rawConn(t)
		listRaw(t, conns[i])
	}
	waitFor(t, "the connections past the first 64 to go bare", func() bool { return ts.srv.bare.n.Load() >= n-maxDressed })
	time.Sleep(50 * time.Millisecond)
	if got := ts.srv.bare.n.Load(); got != n-maxDressed {
		t.Fatalf("%d of %d parked connections went bare, want %d", got, n, n-maxDressed)
	}
	for _, c := range conns {
		listRaw(t, c)
	}
}

// A connection a sweep had taken off the queue, then woken and parked
// again (queued once more) before that sweep made it bare, is made bare
// once: the next sweep found it on the queue, bare, and reached for the
// net.Conn it no longer had, a panic that took the gateway down.
func TestConnectionQueuedAgainBeforeItWentBareIsMadeBareOnce(t *testing.T) {
	ts := startServerWith(t, func(s *Server) { s.bare.after = time.Hour; s.Log = discardLogger() })
	b := &ts.srv.bare
	queued := func() (cn *conn) {
		b.mu.Lock()
		defer b.mu.Unlock()
		if len(b.queue) == 1 && ts.srv.lot.Parked() == 1 {
			cn = b.queue[0]
		}
		return cn
	}
	c := ts.rawConn(t)
	listRaw(t, c)
	waitFor(t, "the connection to be parked", func() bool { return queued() != nil })
	cn := queued()
	// A sweep takes it off the queue, and is slow to reach it...
	b.mu.Lock()
	b.queue, cn.queued = b.queue[:0], false
	b.mu.Unlock()
	// ...while a request wakes it, and it is parked again...
	listRaw(t, c)
	waitFor(t, "the connection to be parked again", func() bool { return queued() == cn })
	// ...before that sweep makes it bare.
	cn.makeBare()
	if n := b.n.Load(); n != 1 {
		t.Fatalf("%d bare connections, want 1", n)
	}
	// The next sweep finds it on the queue, bare, and due.
	b.after = time.Nanosecond
	b.sweep()
	if n := b.n.Load(); n != 1 {
		t.Fatalf("after the next sweep: %d bare connections, want 1", n)
	}
	listRaw(t, c)
}
