package procid

import (
	"fmt"
	"time"
)

// A pin keeps hold of one process lifetime.
type pin interface {
	alive(t *Table, p *Process) error
	// hold keeps, from now on, what later shows that pid executed a new
	// program (see program); called before the process is inspected.
	hold(t *Table, pid int) error
	// look returns an error wrapping ErrChanged when the process no
	// longer runs the program p describes, or ErrGone; otherwise the
	// process's stat as it read it, and the key of the executable it
	// stat'ed (zero when the executable is hidden). The caller checks
	// that the process is alive afterwards.
	look(t *Table, p *Process) (Stat, exeKey, error)
	// stat reads the process's /proc/PID/stat as it is now.
	stat(t *Table, p *Process) (Stat, error)
	// exe reads the executable of pid, the process pinned, and the key
	// it found it with.
	exe(t *Table, pid int) (Exe, exeKey, error)
	exited() <-chan struct{}
	// exitsWithin reports whether the process exits within d (or has);
	// false where that cannot be told without reading /proc.
	exitsWithin(d time.Duration) bool
	// watchExit calls onExit, once, if the process exits before stop,
	// which ends the watch and waits for it; nil where exits cannot be
	// watched.
	watchExit(onExit func()) (stop func())
	close() error
	ino() uint64
}

// startPin is the fallback where no pidfd exists: the process is the same
// while its pid has the same start time, and runs the same program while
// it maps the same executable with the same address space layout.
type startPin struct{}

func (startPin) alive(t *Table, p *Process) error {
	st, err := t.Stat(p.PID)
	if err != nil {
		return err
	}
	if st.StartTicks != p.StartTicks {
		return fmt.Errorf("pid %d: %w", p.PID, ErrGone)
	}
	return nil
}

func (startPin) hold(*Table, int) error { return nil }

func (startPin) look(t *Table, p *Process) (Stat, exeKey, error) {
	e, k, err := t.ExeID(p.PID)
	if err != nil {
		return Stat{}, exeKey{}, err
	}
	if !e.Same(p.Exe) {
		return Stat{}, exeKey{}, fmt.Errorf("pid %d executes another file: %w", p.PID, ErrChanged)
	}
	st, err := t.Stat(p.PID)
	if err != nil {
		return Stat{}, exeKey{}, err
	}
	return st, k, sameLayout(p, &st)
}

func (startPin) stat(t *Table, p *Process) (Stat, error)    { return t.Stat(p.PID) }
func (startPin) exe(t *Table, pid int) (Exe, exeKey, error) { return t.exeOf(pid, noDir) }

func (startPin) exited() <-chan struct{}        { return nil }
func (startPin) exitsWithin(time.Duration) bool { return false }
func (startPin) watchExit(func()) (stop func()) { return nil }
func (startPin) close() error                   { return nil }
func (startPin) ino() uint64                    { return 0 }

// sameLayout compares the address space layout st shows with the one p
// was identified with.
func sameLayout(p *Process, st *Stat) error {
	if st.StartTicks != p.StartTicks {
		return fmt.Errorf("pid %d: %w", p.PID, ErrGone)
	}
	if p.Layout != (Layout{}) && st.Layout != p.Layout {
		return fmt.Errorf("pid %d has a new address space layout: %w", p.PID, ErrChanged)
	}
	return nil
}
