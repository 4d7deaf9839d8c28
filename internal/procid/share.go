package procid

import (
	"fmt"
	"sync"
)

// Connections from one process share one pin. A pidfd pin holds four
// descriptors (the pidfd, and /proc/PID, its stat and its maps, which
// show an exec); held per connection, a process that opens ten thousand
// connections (a hostile run, a soak test) would cost the gateway fifty
// thousand descriptors. Shared, it costs one per connection (the socket)
// and four in all. A pin is shared only while it still shows the process
// alive and running the program it pinned: a connection made after an
// exec gets a pin of its own, and the connections made before keep
// finding the change when they are verified.

// A shared pin is found by the process's pid and its pidfs inode where
// pidfs numbers each process once for the life of the system (Linux 6.9
// and later, 64-bit): that is known without reading /proc. Elsewhere it is
// found by pid and start time, read from /proc/PID/stat.
type shareKey struct {
	pid   int
	start uint64 // 0 when keyed by ino
	ino   uint64 // 0 when keyed by start
}

// keyOf returns the key of the process pn pins, with pid; start is
// called only when pidfs inodes cannot tell processes apart.
func keyOf(pid int, pn pin, start func() (uint64, error)) (shareKey, error) {
	if ino := pn.ino(); ino != 0 && uniquePidfsInodes() {
		return shareKey{pid: pid, ino: ino}, nil
	}
	st, err := start()
	return shareKey{pid: pid, start: st}, err
}

// sharedPin is a pin and the connections that use it.
type sharedPin struct {
	pin
	t    *Table
	key  shareKey
	proc Process // the process as it was pinned
	seen exeKey  // the key its executable was found with then
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

// shared returns the peer pid as it is now, pinned by the pin already
// shared for the process pn pins, when there is one that still holds the
// process as it was pinned; nil otherwise. What the shared pin reads to
// find the process unchanged (its stat, its executable's identity) is
// what identifying it would read again, and serves for it: the new
// peer's parent, session and name are as they are now, its executable
// the one the pin's process was identified with, found again at the
// same device and inode with the same size and times as then (the key
// of its hash), and alive after the reads. A uid not given is read from
// /proc/PID/status.
func (t *Table) shared(pid int, uid *uint32, pn pin) *Peer {
	key, err := keyOf(pid, pn, func() (uint64, error) {
		st, err := t.Stat(pid)
		return st.StartTicks, err
	})
	if err != nil {
		return nil
	}
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
	p, err := t.again(pid, uid, r)
	if err != nil {
		r.close()
		return nil
	}
	return p
}

// again identifies pid, pinned by r, from what checking r's process
// reads (see shared).
func (t *Table) again(pid int, uid *uint32, r *pinRef) (*Peer, error) {
	st, k, err := r.look(t, &r.proc)
	if err != nil {
		return nil, err
	}
	if k != r.seen {
		return nil, fmt.Errorf("pid %d: the executable's attributes changed since it was identified", pid)
	}
	exe := r.proc.Exe
	proc := Process{PID: pid, PPID: st.PPID, StartTicks: st.StartTicks, Session: st.Session, Comm: st.Comm, Exe: exe, Layout: st.Layout, PidfsIno: r.ino()}
	if uid != nil {
		proc.UID = *uid
	} else if proc.UID, err = t.UID(pid); err != nil {
		return nil, err
	}
	p := &Peer{Process: proc, table: t, pin: r}
	if err := r.alive(t, &p.Process); err != nil {
		return nil, err
	}
	return p, nil
}

// share makes pn, which pins proc, shareable, and returns its first user.
func (t *Table) share(pn pin, proc *Process, exe exeKey) pin {
	key, _ := keyOf(proc.PID, pn, func() (uint64, error) { return proc.StartTicks, nil })
	s := &sharedPin{pin: pn, t: t, key: key, proc: *proc, seen: exe, refs: 1}
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
