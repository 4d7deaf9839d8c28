package sshagent

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"golang.org/x/crypto/ssh/agent"

	"github.com/postern/postern/internal/connlimit"
)

// listRaw sends REQUEST_IDENTITIES on c and reads the whole answer.
func listRaw(t *testing.T, c net.Conn) {
	t.Helper()
	if _, err := c.Write([]byte{0, 0, 0, 1, msgRequestIdentities}); err != nil {
		t.Fatal(err)
	}
	var hdr [4]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, make([]byte, binary.BigEndian.Uint32(hdr[:]))); err != nil {
		t.Fatal(err)
	}
}

// At a user's connection bound, a new client is served: the connection
// idle the longest is closed to make room, and one in the middle of a
// request (its length sent, its body trickling) is not.
func TestIdleConnectionsMakeRoom(t *testing.T) {
	limits := &connlimit.Limiter{PerUID: 4}
	ts := startServerWith(t, func(s *Server) { s.Limits = limits })
	var conns []net.Conn
	defer func() {
		// Every handler has ended (and logged) before the test does.
		for _, c := range conns {
			c.Close()
		}
		for limits.Total() > 0 {
			time.Sleep(time.Millisecond)
		}
	}()
	dial := func() net.Conn {
		c, err := net.Dial("unix", ts.sock)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		return c
	}
	// The oldest is idle before the others connect: until its admission
	// ends (identifying the first connection of a process takes
	// longest), and while a request of its is answered, it is busy, and a
	// later one may become idle first.
	oldest := dial()
	listRaw(t, oldest)
	for limits.Idle() < 1 {
		time.Sleep(time.Millisecond)
	}
	busy := dial()
	var hdr [5]byte
	binary.BigEndian.PutUint32(hdr[:], MaxMessage) // announces the largest request...
	hdr[4] = 11                                    // ...and sends one byte of it
	busy.Write(hdr[:])
	dial()
	dial()
	for limits.Total() < 4 {
		time.Sleep(time.Millisecond)
	}
	c := dial()
	keys, err := agent.NewClient(c).List()
	if err != nil || len(keys) != 0 {
		t.Fatalf("a new client at the bound: %v %v", keys, err)
	}
	oldest.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := oldest.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("the connection idle the longest: %v", err)
	}
	busy.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if _, err := busy.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the connection in the middle of a request: %v", err)
	}
}

// A client that sends requests and never reads the answers does not keep
// its connection busy, and so counted against the user, for ever: once
// the answers fill the socket, the one that cannot be written within
// replyTimeout ends the connection.
func TestUnreadRepliesEndTheConnection(t *testing.T) {
	old := replyTimeout
	replyTimeout = 200 * time.Millisecond
	defer func() { replyTimeout = old }()
	limits := &connlimit.Limiter{PerUID: 1}
	ts := startServerWith(t, func(s *Server) { s.Limits = limits })
	c := ts.rawConn(t)
	// Far more answers than a socket's buffer holds.
	reqs := make([]byte, 0, 5*20000)
	for range 20000 {
		reqs = append(reqs, 0, 0, 0, 1, msgRequestIdentities)
	}
	go c.Write(reqs)
	deadline := time.Now().Add(10 * time.Second)
	for limits.Total() < 1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	for limits.Total() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("a connection whose answers are never read still held after 10 s (%d busy)", limits.Total()-limits.Idle())
		}
		time.Sleep(10 * time.Millisecond)
	}
	keys, err := agent.NewClient(ts.rawConn(t)).List()
	if err != nil || len(keys) != 0 {
		t.Fatalf("a new client after it: %v %v", keys, err)
	}
}

// With every connection of its user in the middle of a request, a new
// client is refused with the agent's failure to its request (ssh-add:
// "agent refused operation"), also when it sends the request late, not
// with its connection closed under it (a broken pipe, which kills
// ssh-add).
func TestAllBusyIsRefusedWithAFailure(t *testing.T) {
	ts := startAllBusy(t)
	c := ts.rawConn(t)
	c.SetDeadline(time.Now().Add(time.Minute))
	time.Sleep(200 * time.Millisecond) // the server refuses meanwhile
	if _, err := c.Write([]byte{0, 0, 0, 1, msgRequestIdentities}); err != nil {
		t.Fatalf("writing the request to a full agent: %v", err)
	}
	answer, err := io.ReadAll(c)
	if want := []byte{0, 0, 0, 1, 5}; string(answer) != string(want) {
		t.Fatalf("a client with every connection of its user busy: answer %v (%v), want the agent's failure %v", answer, err, want)
	}
}

// A client refused with every connection of its user busy, that sends
// no request, is let go within a second or so, as a refused client of
// the control socket is: held for as long as a request may take (30 s),
// a flood of such connections from a program of the user's held a
// descriptor for each, and the gateway ran out.
func TestARefusedClientThatSendsNothingIsLetGo(t *testing.T) {
	ts := startAllBusy(t)
	c := ts.rawConn(t)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("a refused client that sends nothing, after 10 s: %v, want the connection closed", err)
	}
}

// startAllBusy starts a server whose bound is one connection a user, and
// makes that connection busy with a request it sends one byte of.
func startAllBusy(t *testing.T) *testServer {
	t.Helper()
	limits := &connlimit.Limiter{PerUID: 1}
	ts := startServerWith(t, func(s *Server) { s.Limits = limits })
	busy := ts.rawConn(t)
	// A connection is busy while it is admitted too, and idle (and so
	// pushed out by the next) between its admission and its first
	// request: busy is seen busy with its request only once it has been
	// idle after an answer.
	listRaw(t, busy)
	waitFor(t, "the first connection idle after its answer", func() bool { return limits.Total() == 1 && limits.Idle() == 1 })
	var hdr [5]byte
	binary.BigEndian.PutUint32(hdr[:], MaxMessage) // announces the largest request...
	hdr[4] = 11                                    // ...and sends one byte of it
	busy.Write(hdr[:])
	waitFor(t, "the first connection busy with its request", func() bool { return limits.Total() == 1 && limits.Idle() == 0 })
	return ts
}

// waitFor polls cond until it holds, failing after a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s", what)
		}
	}
}
