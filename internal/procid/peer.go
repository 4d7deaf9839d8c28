package procid

import "fmt"

// A Peer is the process at the other end of a connection, pinned at
// connect time. Verify re-checks it against live evidence; call it before
// acting on every request, not only at connect.
type Peer struct {
	Process
	table *Table
	pin   pin
}

// Verify reports whether the peer is still the process that connected:
// still alive, the pid not reused, the same executable. It returns an
// error wrapping ErrGone or ErrChanged otherwise.
func (p *Peer) Verify() error {
	if err := p.pin.alive(p.table, &p.Process); err != nil {
		return err
	}
	e, _, err := p.table.ExeID(p.PID)
	if err != nil {
		return err
	}
	if !e.Same(p.Exe) {
		return fmt.Errorf("pid %d: %w", p.PID, ErrChanged)
	}
	// Alive after the stat: the pid belonged to the pinned process while
	// the executable was read.
	return p.pin.alive(p.table, &p.Process)
}

// Exited returns a channel that is closed when the peer process exits.
// It is nil when the platform cannot watch exits; callers then rely on
// Verify.
func (p *Peer) Exited() <-chan struct{} { return p.pin.exited() }

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
// the facts read from /proc are about the pinned process.
func (t *Table) finish(pid int, uid uint32, haveUID bool, pn pin) (*Peer, error) {
	proc, err := t.Inspect(pid)
	if err != nil {
		pn.close()
		return nil, err
	}
	if haveUID {
		proc.UID = uid
	}
	proc.PidfsIno = pn.ino()
	p := &Peer{Process: proc, table: t, pin: pn}
	if err := pn.alive(t, &p.Process); err != nil {
		pn.close()
		return nil, err
	}
	return p, nil
}
