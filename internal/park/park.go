// Package park holds connections that wait for their next request
// without a goroutine each.
//
// A server that gives every connection a goroutine pays for each idle
// one: the goroutine's stack, grown by the last request it served, and
// whatever it holds while it blocks in a read. An agent socket has
// thousands of such connections (every ssh session keeps one). Parked
// in a Lot, a connection costs its socket and the few words of its
// Spot; one goroutine watches every parked socket (on Linux, an epoll
// set registered with the Go runtime's own poller, so not even a thread
// blocks for it), and when one becomes readable (a request, the end of
// the connection, an error), its Spot leaves the Lot and its wake
// function runs in a goroutine of its own, which serves the request and
// parks the connection again.
//
// Where parking is not available (other systems, or the Lot could not be
// set up: no descriptor for the epoll set), Park reports false and the
// caller keeps waiting in its own goroutine, as it would without a Lot.
//
//	spot, err := lot.Spot(conn, func() { serve(conn) })
//	...
//	if !spot.Park() {
//		serve(conn) // blocks in its read, as before
//	}
//
// A Spot is parked at most once at a time: after Park reports true, the
// caller no longer touches the connection until wake runs, or until Leave
// reports true (the connection is the caller's again: to close it, say,
// when an idle connection must make room for a new one).
//
// A connection that waits long may give up its net.Conn (the Go
// runtime's poller entry, the net.Conn's own state) and keep a bare
// descriptor of its socket: Spot.Bare parks that descriptor instead, and
// Spot.Conn goes back to a connection once the caller has one again.
package park

import (
	"sync"
	"syscall"
)

// A Lot holds parked connections. The zero Lot is ready to use; its
// watcher starts with the first Park.
type Lot struct {
	mu     sync.Mutex
	poll   *poller // nil until the first Park; broken: nil again, and off
	off    bool    // the poller failed: Park reports false from then on
	parked map[uint32]*Spot
	last   uint32 // the last ticket given
}

// A Spot is one connection's place in a Lot.
type Spot struct {
	lot    *Lot
	raw    syscall.RawConn // nil while bare
	fd     int             // while bare: the socket's descriptor
	wake   func()
	ticket uint32  // while parked; 0 otherwise (guarded by lot.mu)
	sys    spotSys // the poller's state for the connection (guarded by lot.mu)
}

// Spot makes a place in l for connection c; wake is what runs, in a
// goroutine of its own, when c is parked and becomes readable.
func (l *Lot) Spot(c syscall.Conn, wake func()) (*Spot, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	return &Spot{lot: l, raw: raw, wake: wake}, nil
}

// Bare makes s park the socket held by the bare descriptor fd (which
// stays the caller's to close) from its next Park on, in place of its
// connection: for a connection that gave up its net.Conn while it waits
// (the Go runtime's poller entry and the connection's state go with it).
// The Lot takes the descriptor out of its set when it wakes s, so that
// the caller may close it at once. Not while s is parked.
func (s *Spot) Bare(fd int) {
	s.lot.mu.Lock()
	defer s.lot.mu.Unlock()
	s.raw, s.fd, s.sys = nil, fd, spotSys{}
}

// Conn makes s park c from its next Park on (after Bare). Not while s is
// parked.
func (s *Spot) Conn(c syscall.Conn) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	s.lot.mu.Lock()
	defer s.lot.mu.Unlock()
	s.raw, s.sys = raw, spotSys{}
	return nil
}

// Park hands the connection to the Lot until it becomes readable, and
// reports whether it did. After false, nothing changed: the caller
// waits for the connection itself.
func (s *Spot) Park() bool {
	l := s.lot
	l.mu.Lock()
	defer l.mu.Unlock()
	if s.ticket != 0 {
		panic("park: a Spot parked twice")
	}
	if l.poll == nil {
		if l.off {
			return false
		}
		p, err := newPoller(l)
		if err != nil {
			return false // tried again at the next Park
		}
		l.poll = p
	}
	if l.parked == nil {
		l.parked = map[uint32]*Spot{}
	}
	t := l.nextTicket()
	if err := l.poll.arm(s, t); err != nil {
		return false
	}
	s.ticket = t
	l.parked[t] = s
	return true
}

// nextTicket returns a ticket no parked Spot holds, never 0: a wake-up
// for a ticket that has left (a Spot that left, whose socket then
// closed) finds no Spot or another one, which it wakes for nothing worse
// than a read that blocks.
func (l *Lot) nextTicket() uint32 {
	for {
		l.last++
		if _, used := l.parked[l.last]; l.last != 0 && !used {
			return l.last
		}
	}
}

// Leave takes the connection back from the Lot if it is parked, and
// reports whether it was: then wake will not run for this Park, and the
// caller owns the connection again. After false, wake has run or is
// about to (or the Spot was not parked).
func (s *Spot) Leave() bool {
	l := s.lot
	l.mu.Lock()
	defer l.mu.Unlock()
	if s.ticket == 0 {
		return false
	}
	delete(l.parked, s.ticket)
	s.ticket = 0
	if l.poll != nil {
		l.poll.disarm(s)
	}
	return true
}

// Parked returns how many connections are parked in l.
func (l *Lot) Parked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.parked)
}

// ready wakes the Spots holding the tickets given: each leaves the Lot
// and its wake runs in a goroutine of its own.
func (l *Lot) ready(tickets []uint32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, t := range tickets {
		s := l.parked[t]
		if s == nil {
			continue
		}
		delete(l.parked, t)
		s.ticket = 0
		if s.raw == nil && l.poll != nil {
			l.poll.disarm(s) // the caller may close the descriptor
		}
		go s.wake()
	}
}

// fail turns parking off after the poller failed, and wakes every
// parked Spot: each connection's goroutine then waits for it itself.
func (l *Lot) fail() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.poll, l.off = nil, true
	for t, s := range l.parked {
		delete(l.parked, t)
		s.ticket = 0
		go s.wake()
	}
}
