// Package connlimit bounds the connections a gateway socket serves per
// peer user, so that one user's flood of connections costs that user
// connections, never the gateway its memory, its descriptors or its
// life.
//
// A server takes a Slot for each connection it admits, naming the peer's
// uid, and marks the slot busy while it works on a request. When a user
// is at the limit, the connection of that user that has been idle the
// longest is closed to make room, and only connections that sit idle
// are ever pushed out. When every one of the user's connections is busy,
// or idle only a moment (KeepIdle), the new one is refused.
//
// EvictOldestIdle closes the connection idle the longest, whoever its
// user and whichever of several limiters counts it, for a server that ran
// out of descriptors (accept failed with EMFILE): the gateway sheds its
// oldest idle connection instead of failing. One idle only a moment
// (just admitted, or just answered) is kept: its client is about to send
// a request.
package connlimit

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// ErrFull is returned by Take when every connection of the user is busy.
var ErrFull = errors.New("too many connections from this user")

// Limiter counts the connections of one kind of socket.
type Limiter struct {
	// PerUID is the most connections one user may hold; 0 means no limit.
	// Set it before the first Take, or with SetPerUID.
	PerUID int
	// KeepIdle is how long a connection must have been idle before Take
	// closes it to make room for another of its user's: one idle a
	// moment (just admitted, or just answered) is its client's, sending
	// a request, which a closed connection would fail with a broken
	// pipe. Set it before the first Take.
	KeepIdle time.Duration

	mu    sync.Mutex
	idle  slotList // idle the longest first
	count map[uint32]int
}

// SetPerUID changes the bound while connections come and go; the
// connections over it stay until they end.
func (l *Limiter) SetPerUID(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.PerUID = n
}

// Slot is one admitted connection. It costs a connection a few words:
// an agent has thousands of idle ones.
type Slot struct {
	l          *Limiter
	c          io.Closer
	prev, next *Slot         // in l.idle while listed
	since      time.Duration // idle since (monotonic time)
	uid        uint32
	busy       int32
	listed     bool // in l.idle
	evicted    bool
	done       bool
}

// clock is what Slot.since counts from.
var clock = time.Now()

func now() time.Duration { return time.Since(clock) }

// slotList is a list of slots, linked through the slots themselves.
type slotList struct {
	head, tail *Slot
	n          int
}

func (q *slotList) pushBack(s *Slot) {
	s.prev, s.next, s.listed = q.tail, nil, true
	if q.tail != nil {
		q.tail.next = s
	} else {
		q.head = s
	}
	q.tail = s
	q.n++
}

// remove takes s out of q, if it is in.
func (q *slotList) remove(s *Slot) {
	if !s.listed {
		return
	}
	if s.prev != nil {
		s.prev.next = s.next
	} else {
		q.head = s.next
	}
	if s.next != nil {
		s.next.prev = s.prev
	} else {
		q.tail = s.prev
	}
	s.prev, s.next, s.listed = nil, nil, false
	q.n--
}

// Take admits connection c of user uid, idle. When the user is at the
// limit, the user's connection idle the longest is closed first, if it
// has been idle at least KeepIdle; when none of them has, c is not
// admitted (ErrFull): the caller refuses it.
func (l *Limiter) Take(uid uint32, c io.Closer) (*Slot, error) {
	l.mu.Lock()
	if l.count == nil {
		l.count = map[uint32]int{}
	}
	var victim *Slot
	if l.PerUID > 0 && l.count[uid] >= l.PerUID {
		// The list is in the order the slots became idle: the user's
		// first is the one idle the longest.
		for s := l.idle.head; s != nil; s = s.next {
			if s.uid == uid {
				if now()-s.since >= l.KeepIdle {
					victim = s
					l.dropLocked(s)
				}
				break
			}
		}
		if victim == nil {
			l.mu.Unlock()
			if l.KeepIdle > 0 {
				return nil, fmt.Errorf("%w (%d, none idle for %v)", ErrFull, l.PerUID, l.KeepIdle)
			}
			return nil, fmt.Errorf("%w (%d, all busy)", ErrFull, l.PerUID)
		}
	}
	s := &Slot{l: l, uid: uid, c: c, since: now()}
	l.idle.pushBack(s)
	l.count[uid]++
	var closer io.Closer
	if victim != nil {
		closer = victim.c
	}
	l.mu.Unlock()
	if closer != nil {
		closer.Close()
	}
	return s, nil
}

// EvictOldestIdle closes the connection idle the longest among the
// limiters' (of any user), if it has been idle at least min, and reports
// whether it closed one: for a server out of descriptors, whatever socket
// the connection is on. A connection idle for less than min is kept: its
// client, which has just connected or just had an answer, is sending its
// request, and would fail on a closed connection (a broken pipe) where
// the server can still refuse it and say why.
func EvictOldestIdle(min time.Duration, ls ...*Limiter) bool {
	var oldest *Limiter
	var since time.Duration
	for _, l := range ls {
		l.mu.Lock()
		if s := l.idle.head; s != nil {
			if oldest == nil || s.since < since {
				oldest, since = l, s.since
			}
		}
		l.mu.Unlock()
	}
	return oldest != nil && oldest.EvictIdle(min)
}

// EvictIdle closes the connection idle the longest, of any user, if it
// has been idle at least min, and reports whether it closed one.
func (l *Limiter) EvictIdle(min time.Duration) bool {
	l.mu.Lock()
	s := l.idle.head
	if s == nil || now()-s.since < min {
		l.mu.Unlock()
		return false
	}
	l.dropLocked(s)
	closer := s.c
	l.mu.Unlock()
	closer.Close()
	return true
}

// dropLocked stops counting s, which is being evicted.
func (l *Limiter) dropLocked(s *Slot) {
	l.idle.remove(s)
	s.evicted = true
	l.count[s.uid]--
	if l.count[s.uid] == 0 {
		delete(l.count, s.uid)
	}
}

// Busy marks the connection busy (it cannot be evicted) until the
// returned function is called; then it is idle again, and the most
// recently active.
func (s *Slot) Busy() (idle func()) {
	l := s.l
	l.mu.Lock()
	if s.busy == 0 {
		l.idle.remove(s)
	}
	s.busy++
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		s.busy--
		if s.busy == 0 && !s.evicted && !s.done {
			s.since = now()
			l.idle.pushBack(s)
		}
	}
}

// SetCloser makes c what closes the connection when the limiter evicts
// it, in place of the closer given to Take: for a server whose idle
// connections have no goroutine to notice their socket closing, and so
// must be ended by whoever evicts them.
func (s *Slot) SetCloser(c io.Closer) {
	s.l.mu.Lock()
	defer s.l.mu.Unlock()
	s.c = c
}

// Release stops counting the connection; the caller closes it. It may be
// called more than once.
func (s *Slot) Release() {
	l := s.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if s.done {
		return
	}
	s.done = true
	if s.evicted {
		return
	}
	l.idle.remove(s)
	l.count[s.uid]--
	if l.count[s.uid] == 0 {
		delete(l.count, s.uid)
	}
}

// Evicted reports whether the limiter closed the connection to make
// room.
func (s *Slot) Evicted() bool {
	s.l.mu.Lock()
	defer s.l.mu.Unlock()
	return s.evicted
}

// Count returns how many connections user uid holds.
func (l *Limiter) Count(uid uint32) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.count[uid]
}

// Total returns how many connections are held, all users together.
func (l *Limiter) Total() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.count {
		n += c
	}
	return n
}

// Idle returns how many connections are idle, all users together.
func (l *Limiter) Idle() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.idle.n
}
