package procid

import "sync"

// Connections from one process share one pin. A pidfd pin holds four
// descriptors (the pidfd, and /proc/PID, its stat and its maps, which
// show an exec); held per connection, a process that opens ten thousand
// connections (a hostile run, a soak test) would cost the gateway fifty
// thousand descriptors. Shared, it costs one per connection (the socket)
// and four in all. A pin is shared only while it still shows the process
// alive and running the program it pinned: a connection made after an
// exec gets a pin of its own, and the connections made before keep
// finding the change when they are verified.

type shareKey struct {
	pid   int
	start uint64
}

// sharedPin is a pin and the connections that use it.
type sharedPin struct {
	pin
	t    *Table
	key  shareKey
	proc Process // the process as it was pinned
	refs int     // guarded by t.mu
}

// pinRef is one user of a sharedPin; close releases it once.
type pinRef struct {
	*sharedPin
	once sync.Once
}

// hold does nothing: the shared pin holds its files already.
func (*pinRef) hold(*Table, int) error { return nil }

func (r *pinRef) close() error {
	var err error
	r.once.Do(func() { err = r.t.release(r.sharedPin) })
	return err
}

// shared returns a user of the pin already shared for pid, when there is
// one that still holds the process as it was pinned; nil otherwise.
func (t *Table) shared(pid int) pin {
	st, err := t.Stat(pid)
	if err != nil {
		return nil
	}
	key := shareKey{pid, st.StartTicks}
	t.mu.Lock()
	s := t.pins[key]
	if s != nil {
		s.refs++
	}
	t.mu.Unlock()
	if s == nil {
		return nil
	}
	r := &pinRef{sharedPin: s}
	if s.alive(t, &s.proc) != nil || s.program(t, &s.proc) != nil {
		r.close()
		return nil
	}
	return r
}

// share makes pn, which pins proc, shareable, and returns its first user.
func (t *Table) share(pn pin, proc *Process) pin {
	s := &sharedPin{pin: pn, t: t, key: shareKey{proc.PID, proc.StartTicks}, proc: *proc, refs: 1}
	t.mu.Lock()
	if t.pins == nil {
		t.pins = map[shareKey]*sharedPin{}
	}
	t.pins[s.key] = s
	t.mu.Unlock()
	return &pinRef{sharedPin: s}
}

// release drops one user of s; the last one closes the pin.
func (t *Table) release(s *sharedPin) error {
	t.mu.Lock()
	s.refs--
	last := s.refs == 0
	if last && t.pins[s.key] == s {
		delete(t.pins, s.key)
	}
	t.mu.Unlock()
	if last {
		return s.pin.close()
	}
	return nil
}
