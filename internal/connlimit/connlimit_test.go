package connlimit

import (
	"errors"
	"sync"
	"testing"
	"time"
)

type conn struct {
	mu     sync.Mutex
	closed bool
}

func (c *conn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	return nil
}

func (c *conn) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

func take(t *testing.T, l *Limiter, uid uint32) (*Slot, *conn) {
	t.Helper()
	c := &conn{}
	s, err := l.Take(uid, c)
	if err != nil {
		t.Fatalf("Take(%d): %v", uid, err)
	}
	return s, c
}

// At the limit, a new connection pushes out the user's connection idle
// the longest; busy ones stay; other users are not touched.
func TestTakeEvictsTheOldestIdle(t *testing.T) {
	l := &Limiter{PerUID: 3}
	s1, c1 := take(t, l, 1000)
	s2, c2 := take(t, l, 1000)
	_, c3 := take(t, l, 1000)
	_, other := take(t, l, 2000)
	idle := s1.Busy() // s1 works on a request, so s2 is now the oldest idle
	_, c4 := take(t, l, 1000)
	if !c2.isClosed() || c1.isClosed() || c3.isClosed() || other.isClosed() || c4.isClosed() {
		t.Fatalf("closed: c1 %v c2 %v c3 %v other %v c4 %v", c1.closed, c2.closed, c3.closed, other.closed, c4.closed)
	}
	if !s2.Evicted() || l.Count(1000) != 3 || l.Count(2000) != 1 || l.Total() != 4 {
		t.Fatalf("evicted %v, counts %d %d %d", s2.Evicted(), l.Count(1000), l.Count(2000), l.Total())
	}
	s2.Release() // the evicted connection's handler ends: counted once only
	if l.Count(1000) != 3 {
		t.Fatalf("count after the evicted slot's release: %d", l.Count(1000))
	}
	idle()
	// s1 is idle again and now the most recent: c3 goes first.
	take(t, l, 1000)
	if !c3.isClosed() || c1.isClosed() {
		t.Fatalf("after s1 was active: c1 %v c3 %v", c1.closed, c3.closed)
	}
}

// When every connection of the user is busy, the new one is refused.
func TestTakeRefusesWhenAllBusy(t *testing.T) {
	l := &Limiter{PerUID: 2}
	a, _ := take(t, l, 7)
	b, _ := take(t, l, 7)
	doneA, doneB := a.Busy(), b.Busy()
	if _, err := l.Take(7, &conn{}); !errors.Is(err, ErrFull) {
		t.Fatalf("Take with all busy: %v", err)
	}
	if _, err := l.Take(8, &conn{}); err != nil {
		t.Fatalf("another user: %v", err)
	}
	doneA()
	doneB()
	a.Release()
	a.Release()
	if l.Count(7) != 1 {
		t.Fatalf("count %d", l.Count(7))
	}
	take(t, l, 7)
}

// EvictIdle sheds the connection idle the longest, of any user.
func TestEvictIdle(t *testing.T) {
	l := &Limiter{}
	_, c1 := take(t, l, 1)
	s2, _ := take(t, l, 2)
	defer s2.Busy()()
	if !l.EvictIdle(0) || !c1.isClosed() {
		t.Fatal("the idle connection was not evicted")
	}
	if l.EvictIdle(0) {
		t.Fatal("a busy connection was evicted")
	}
	if l.Total() != 1 {
		t.Fatalf("total %d", l.Total())
	}
}

// A slot's closer can be replaced: eviction then closes through the new
// one (a server whose idle connections no goroutine watches ends them
// itself), and may release the slot from inside Close.
func TestSetCloser(t *testing.T) {
	l := &Limiter{PerUID: 1}
	s, first := take(t, l, 7)
	ended := &conn{}
	s.SetCloser(closerFunc(func() error {
		s.Release() // as the server's end does, from inside Close
		return ended.Close()
	}))
	if l.Idle() != 1 {
		t.Fatalf("%d idle, want 1", l.Idle())
	}
	take(t, l, 7)
	if first.isClosed() || !ended.isClosed() {
		t.Fatalf("evicted: the closer given to Take closed %v, the one set %v", first.isClosed(), ended.isClosed())
	}
	if l.Count(7) != 1 || l.Idle() != 1 {
		t.Fatalf("after the eviction: %d held, %d idle; want 1 and 1", l.Count(7), l.Idle())
	}
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// A connection idle for less than the minimum (just admitted, or just
// answered: its client is sending a request) is not shed for a server out
// of descriptors; once idle that long, it is, on whichever limiter.
func TestEvictOldestIdleKeepsTheJustIdle(t *testing.T) {
	agent, control := &Limiter{}, &Limiter{}
	s1, c1 := take(t, agent, 1)
	const min = time.Minute
	if EvictOldestIdle(min, agent, control) || c1.isClosed() {
		t.Fatal("a connection idle a moment was shed")
	}
	age(s1, min)
	_, c2 := take(t, control, 1)
	if !EvictOldestIdle(min, agent, control) || !c1.isClosed() {
		t.Fatal("the connection idle the longest, past the minimum, was not shed")
	}
	if EvictOldestIdle(min, agent, control) || c2.isClosed() {
		t.Fatal("the connection idle a moment was shed once the other was")
	}
}

// At the per-user bound, a connection of the user idle for less than
// KeepIdle is not closed to make room (its client is about to send a
// request, and would fail on a broken pipe): the new one is refused, and
// can say why. Once it has been idle that long, it makes room.
func TestTakeKeepsTheJustIdle(t *testing.T) {
	const keep = time.Minute
	l := &Limiter{PerUID: 2, KeepIdle: keep}
	busy, _ := take(t, l, 7)
	defer busy.Busy()()
	s, fresh := take(t, l, 7)
	if _, err := l.Take(7, &conn{}); !errors.Is(err, ErrFull) || fresh.isClosed() {
		t.Fatalf("Take at the bound, the only idle connection just admitted: %v, closed %v", err, fresh.isClosed())
	}
	age(s, keep)
	if _, err := l.Take(7, &conn{}); err != nil || !fresh.isClosed() {
		t.Fatalf("Take at the bound, the idle connection idle %v: %v, closed %v", keep, err, fresh.isClosed())
	}
}

// age makes s idle for d longer than it has been, in place of a wait. s
// is the oldest of its limiter's idle connections, which keeps their
// list in order.
func age(s *Slot, d time.Duration) {
	s.l.mu.Lock()
	defer s.l.mu.Unlock()
	s.since -= d
}
