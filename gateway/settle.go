package gateway

import "time"

// How long the watcher waits for a file's events to stop before it reads
// the file, and how long at most events without pause put the read off.
const (
	settle    = 50 * time.Millisecond
	maxSettle = time.Second
)

// A settler debounces the events of one file: C fires settle after the
// last event, but no later than about maxSettle after the first event not
// yet acted on, so that a program touching the file without pause cannot
// keep the gateway from ever reading it.
type settler struct {
	C     <-chan time.Time // nil while no event waits
	first time.Time
}

// event notes an event.
func (s *settler) event() {
	now := time.Now()
	if s.C == nil {
		s.first = now
	}
	if s.C == nil || now.Sub(s.first) < maxSettle {
		s.C = time.After(settle)
	}
}

// fired notes that C fired, and the file is being read.
func (s *settler) fired() { s.C = nil }
