package sshagent

import (
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/postern/postern/internal/connlimit"
)

// waitFor polls cond until it holds, failing after a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s", what)
		}
	}
}

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
