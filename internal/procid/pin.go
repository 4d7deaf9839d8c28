package procid

import "fmt"

// A pin keeps hold of one process lifetime.
type pin interface {
	alive(t *Table, p *Process) error
	exited() <-chan struct{}
	close() error
	ino() uint64
}

// startPin is the fallback where no pidfd exists: the process is the same
// while its pid has the same start time.
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

func (startPin) exited() <-chan struct{} { return nil }
func (startPin) close() error            { return nil }
func (startPin) ino() uint64             { return 0 }
