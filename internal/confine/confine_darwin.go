package confine

import (
	"errors"
	"os"
	"time"
)

// Available reports that macOS runs are not confined.
func Available() error { return ErrUnsupported }

// Init does nothing on macOS.
func Init() {}

// A Run is a started confined run; there are none on macOS.
type Run struct {
	PID    int
	Helper *os.Process
	Level  Level
}

// Start fails on macOS: see [Available].
func Start(*Spec, *os.File, *os.File, *os.File, *os.File) (*Run, error) { return nil, ErrUnsupported }

// Signal is never reached on macOS.
func (r *Run) Signal(os.Signal) error { return errors.ErrUnsupported }

// Exited is never reached on macOS.
func (r *Run) Exited(time.Duration) bool { return false }

// Wait is never reached on macOS.
func (r *Run) Wait() (int, error) { return 1, errors.ErrUnsupported }

// Suspend is never reached on macOS.
func (r *Run) Suspend(os.Signal) {}

// Resume is never reached on macOS.
func (r *Run) Resume() {}

// Stops never receives: there is no run.
func (r *Run) Stops() <-chan struct{} { return nil }
