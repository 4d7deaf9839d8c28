package procid

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// Cred is what the kernel recorded of the process at the other end of a
// connection when it connected: its pid and uid.
type Cred struct {
	PID int
	UID uint32
}

// A Peer is the process at the other end of a connection, pinned at
// connect time. Verify re-checks it against live evidence; call it before
// acting on every request, not only at connect.
type Peer struct {
	Process
	table *Table
	pin   pin
}

// Verify reports whether the peer is still the process that connected:
// still alive, the pid not reused, and still running the program it ran
// then (see the package documentation: an exec on the same pid is a new
// process). It returns an error wrapping ErrGone or ErrChanged otherwise.
func (p *Peer) Verify() error {
	_, _, err := p.pin.look(p.table, &p.Process)
	// Alive after the reads: the pid belonged to the pinned process while
	// they were made (a live process's pid names no other), and a process
	// that is exiting (its address space already gone) is reported as
	// gone, not changed. A process gone before the reads is gone after
	// them too: no check before is needed.
	if gone := p.pin.alive(p.table, &p.Process); gone != nil {
		return gone
	}
	// A process on its way out shows a change first: its main thread's
	// executable and its address space go before its last thread has
	// exited, which frees its memory first. Given the time that takes, it
	// is gone, not changed.
	if errors.Is(err, ErrChanged) && p.pin.exitsWithin(exitingFor) {
		return fmt.Errorf("pid %d: %w", p.PID, ErrGone)
	}
	return err
}

// exitingFor is how long Verify waits for a process that shows a change
// to exit: tens of milliseconds for a large process to free its memory.
// An exec is told that much later.
const exitingFor = 250 * time.Millisecond

// Alive reports whether the peer process is still alive: its pin holds
// (a pidfd not readable, or the same start time at its pid).
func (p *Peer) Alive() bool { return p.pin.alive(p.table, &p.Process) == nil }

// Stat reads the peer's /proc/PID/stat as it is now (through the file
// held since it was pinned, where there is one).
func (p *Peer) Stat() (Stat, error) { return p.pin.stat(p.table, &p.Process) }

// Exited returns a channel that is closed when the peer process exits.
// It is nil when the platform cannot watch exits; callers then rely on
// Verify.
func (p *Peer) Exited() <-chan struct{} { return p.pin.exited() }

// WatchGone calls onGone, once, in a goroutine of its own, if before stop
// is called the peer process exits or is no longer the process that
// connected. An exit is watched where the platform can (a duplicate of
// the pidfd, held for the watch only: unlike Exited, the watch holds
// nothing once stopped); an exec keeps the pid and gives an unprivileged
// watcher no signal, so the peer is verified again every RecheckEvery.
// onGone is told why, as Verify says it: an error wrapping ErrGone or
// ErrChanged (a check that failed for want of descriptors or memory,
// ErrNoResources, is made again). onGone is not called after stop returns (a check under way
// may still finish its reads of /proc).
func (p *Peer) WatchGone(onGone func(why error)) (stop func()) {
	w := &goneWatch{p: p, onGone: onGone}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.timer = time.AfterFunc(RecheckEvery, w.recheck)
	w.stopExit = p.pin.watchExit(func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.gone(fmt.Errorf("pid %d: %w", p.PID, ErrGone))
	})
	return w.stop
}

// RecheckEvery is how often WatchGone verifies the peer again: a watch
// lasts seconds (a person reading a card), and a check costs a few reads
// of /proc.
const RecheckEvery = 200 * time.Millisecond

// goneWatch is one WatchGone.
type goneWatch struct {
	p        *Peer
	onGone   func(why error)
	stopExit func() // nil where exits cannot be watched

	mu    sync.Mutex
	timer *time.Timer
	ended bool // onGone was called, or the watch stopped
}

// recheck verifies the peer, without holding the lock (a hostile peer can
// slow the reads), and calls onGone or checks again later.
func (w *goneWatch) recheck() {
	err := w.p.Verify()
	w.mu.Lock()
	defer w.mu.Unlock()
	// A check this process was short of descriptors or memory for says
	// nothing of the peer: it is checked again later, and whoever acts
	// for it verifies it first.
	if err != nil && !errors.Is(err, ErrNoResources) {
		w.gone(err)
	} else if !w.ended {
		w.timer.Reset(RecheckEvery)
	}
}

// gone calls onGone unless it was called or the watch stopped. w.mu held.
func (w *goneWatch) gone(why error) {
	if !w.ended {
		w.ended = true
		w.onGone(why)
	}
}

func (w *goneWatch) stop() {
	w.mu.Lock()
	w.ended = true
	w.timer.Stop()
	w.mu.Unlock()
	if w.stopExit != nil {
		w.stopExit()
	}
}

// Close releases the pin on the process.
func (p *Peer) Close() error { return p.pin.close() }

// Pin identifies an already inspected process (such as one the gateway
// just launched) and pins it like a connected peer. pid must be known to
// be alive and to be the process meant, e.g. a child not yet reaped.
func (t *Table) Pin(pid int) (*Peer, error) {
	var pn pin = startPin{}
	var err error
	if t.Root == Host.Root {
		pn, err = pinPID(pid)
	}
	if err != nil {
		return nil, err
	}
	return t.finish(pid, 0, false, pn)
}

// finish inspects pid and checks that the pin still holds afterwards, so
// the facts read from /proc are about the pinned process: a pidfd that is
// still open and not readable proves the process never exited while they
// were read, so its pid named it throughout (the fallback pin compares
// the start time again). A uid the socket's credentials gave is taken as
// given: the kernel recorded it at connect, from the same process.
func (t *Table) finish(pid int, uid uint32, haveUID bool, pn pin) (*Peer, error) {
	var given *uint32
	if haveUID {
		given = &uid
	}
	share := shareable(pn)
	if share {
		if p := t.shared(pid, given, pn); p != nil {
			// The process is pinned already (share.go), if pn's is
			// the one at pid: alive after the shared pin was seen alive
			// there, it held the pid then. A connection whose process
			// exited, its pid taken since by the shared pin's process
			// (found by pid and start time), is not that process's.
			err := pn.alive(t, &p.Process)
			pn.close()
			if err != nil {
				p.Close()
				return nil, err
			}
			return p, nil
		}
	}
	if err := pn.hold(t, pid); err != nil {
		pn.close()
		return nil, err
	}
	proc, key, err := t.inspect(pid, given, pn)
	if err != nil {
		pn.close()
		return nil, err
	}
	if share {
		pn = t.share(pn, &proc, key)
	}
	proc.PidfsIno = pn.ino()
	p := &Peer{Process: proc, table: t, pin: pn}
	if err := pn.alive(t, &p.Process); err != nil {
		pn.close()
		return nil, err
	}
	return p, nil
}
