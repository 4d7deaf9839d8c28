package procid

import (
	"errors"
	"fmt"
)

// maxShown bounds the ancestry shown on a card (display only): pid 1 is
// reached long before this on any real system.
const maxShown = 64

// maxWalk bounds an authority walk: a chain of live processes cannot be
// longer than the largest pid the kernel hands out (PID_MAX_LIMIT). A walk
// that reaches it has met a loop in a fake or racing table, and fails.
const maxWalk = 1 << 22

// ErrUndecided reports an ancestry walk that could not establish the
// answer: a parent that could not be read while its child still named it,
// or a loop. Callers treat it as the answer that grants nothing.
var ErrUndecided = errors.New("the process ancestry could not be established")

// Ancestors returns the live ancestry of p, nearest first, not including
// p itself, at most 64 processes, from the parent p names. The walk stops
// at pid 1, or where a parent is younger than its child (the parent pid
// was reused after the real parent exited). Each parent is inspected
// while a pidfd holds it (see inspectParent), so its facts are the live
// process's at the time of the call. Its result is display context:
// authority decisions use [Table.DescendsFrom].
func (t *Table) Ancestors(p *Process) Chain {
	return t.ancestors(p.PPID, p.StartTicks)
}

// Ancestors returns the live ancestry of the pinned process p, as
// [Table.Ancestors] does, from its parent as it is now: p's stat is read
// again (through its pin), so a process whose parent exited since it was
// pinned shows the parent it was given, never the one it had. It is nil
// when p is gone.
func (p *Peer) Ancestors() Chain {
	st, err := p.ownStat()
	if err != nil {
		return nil
	}
	return p.table.ancestors(st.PPID, st.StartTicks)
}

// ancestors walks up from the parent ppid of a process started at start.
func (t *Table) ancestors(ppid int, start uint64) Chain {
	var chain Chain
	for i := 0; i < maxShown && ppid > 0; i++ {
		parent, err := t.inspectParent(ppid)
		if err != nil || parent.StartTicks > start {
			break
		}
		chain = append(chain, parent)
		if parent.PID == 1 {
			break
		}
		ppid, start = parent.PPID, parent.StartTicks
	}
	return chain
}

// DescendsFrom reports whether the live process pid (with the given start
// time) is root or one of root's descendants, walking parents with their
// start times at the time of the call, as deep as the tree goes.
//
// It answers false only when the walk reached the top of the tree
// without meeting root. When it cannot decide — pid is gone, a parent
// cannot be read while its child still names it, a parent is younger than
// its child and the child was not reparented, or the walk does not end —
// it returns an error wrapping ErrGone or ErrUndecided (ErrNoResources
// when this process had no descriptor or memory to read with), never a plain
// false: an approver's check must not be won by making the walk fail.
func (t *Table) DescendsFrom(pid int, start uint64, root *Process) (bool, error) {
	st, err := t.Stat(pid)
	if err != nil {
		return false, err
	}
	if st.StartTicks != start {
		return false, fmt.Errorf("pid %d: %w", pid, ErrGone)
	}
	return t.walk(pid, st, root, nil)
}

// Within reports whether p is root or one of root's live descendants, as
// DescendsFrom does, for a request's pinned requester and a pinned run:
// p's own stat is read through its pin, and root, which the caller has
// just verified, is recognized without another read when a process names
// its pid as parent while its pin shows it alive (a live process's pid
// cannot name another). A p that is not within root and has exited (a
// zombie, given to another parent when its own exited first) is gone
// (ErrGone): it left root's tree by dying, not by living on elsewhere.
func (p *Peer) Within(root *Peer) (bool, error) {
	st, err := p.ownStat()
	if err != nil {
		return false, err
	}
	alive := func() bool { return root.pin.alive(root.table, &root.Process) == nil }
	in, err := p.table.walk(p.PID, st, &root.Process, alive)
	if err == nil && !in {
		if gone := p.pin.alive(p.table, &p.Process); gone != nil {
			return false, gone
		}
	}
	return in, err
}

// Lineage walks p's live ancestry, p first, as DescendsFrom walks it:
// visit is called with each process's pid and start time, nearest first,
// until it returns false or the top of the tree is reached. It returns an
// error wrapping ErrGone or ErrUndecided when the walk cannot go on (see
// DescendsFrom); what visit saw before then stands. Each process's stat
// is read once (p's through its pin), so a caller that looks something up
// at every ancestor walks the ancestry once, however much it looks up.
//
// known, when given, is asked about a parent before its stat is read: it
// answers with the start time of a process the caller holds pinned and
// has just seen alive at that pid. A live process's pid names no other,
// so the child's parent is that process, and it is visited without the
// read (when it is not younger than the child). A parent visited so that
// does not end the walk is read and visited again.
func (p *Peer) Lineage(known func(pid int) (start uint64, ok bool), visit func(pid int, start uint64) bool) error {
	st, err := p.ownStat()
	if err != nil {
		return err
	}
	var vouch func(ppid int, child Stat) bool
	if known != nil {
		vouch = func(ppid int, child Stat) bool {
			start, ok := known(ppid)
			return ok && start <= child.StartTicks && !visit(ppid, start)
		}
	}
	return p.table.climb(p.PID, st, func(pid int, st Stat) bool { return !visit(pid, st.StartTicks) }, vouch)
}

// ownStat reads p's stat through its pin and checks its start time.
func (p *Peer) ownStat() (Stat, error) {
	st, err := p.Stat()
	if err != nil {
		return Stat{}, err
	}
	if st.StartTicks != p.StartTicks {
		return Stat{}, fmt.Errorf("pid %d: %w", p.PID, ErrGone)
	}
	return st, nil
}

// walk goes up from pid, whose stat is st, until it meets root or the
// top of the tree; see DescendsFrom. rootAlive, when given, vouches for
// root's pid.
func (t *Table) walk(pid int, st Stat, root *Process, rootAlive func() bool) (bool, error) {
	found := false
	at := func(pid int, st Stat) bool {
		if pid == root.PID {
			found = st.StartTicks == root.StartTicks
			return true
		}
		return false
	}
	var vouch func(ppid int, child Stat) bool
	if rootAlive != nil {
		vouch = func(ppid int, child Stat) bool {
			if ppid == root.PID && root.StartTicks <= child.StartTicks && rootAlive() {
				found = true
				return true
			}
			return false
		}
	}
	err := t.climb(pid, st, at, vouch)
	return found, err
}

// climb goes up from pid, whose stat is st: at is called with each
// process on the way, pid first, and ends the walk by returning true;
// vouch, when given, is asked about a parent before its stat is read and
// ends the walk by returning true. It returns nil when one of them ended
// the walk or the top of the tree was reached, and otherwise an error
// wrapping ErrUndecided (see DescendsFrom), or ErrNoResources when this
// process had no descriptor or memory to read a parent with.
func (t *Table) climb(pid int, st Stat, at func(pid int, st Stat) bool, vouch func(ppid int, child Stat) bool) error {
	for range maxWalk {
		if at(pid, st) || st.PPID <= 0 {
			return nil
		}
		if vouch != nil && vouch(st.PPID, st) {
			return nil
		}
		parent, err := t.Stat(st.PPID)
		if err != nil || parent.StartTicks > st.StartTicks {
			// The parent exited and its pid may have been reused: the
			// child has been reparented by now. Read it again and go on
			// from its new parent.
			again, err2 := t.Stat(pid)
			switch {
			case errors.Is(err, ErrNoResources):
				// Nothing was learnt of the parent.
				return err
			case errors.Is(err2, ErrNoResources):
				return err2
			case err2 != nil || again.StartTicks != st.StartTicks:
				return fmt.Errorf("pid %d left while its ancestry was read: %w", pid, ErrUndecided)
			case again.PPID == st.PPID:
				if err == nil {
					err = fmt.Errorf("parent %d is younger than its child %d", st.PPID, pid)
				}
				return fmt.Errorf("%w: %v", ErrUndecided, err)
			}
			st = again
			continue
		}
		pid, st = st.PPID, parent
	}
	return fmt.Errorf("pid %d: the walk does not end: %w", pid, ErrUndecided)
}
