package bastion

import "sync"

// journalGate counts the commands journaled through this bastion whose
// end is still to be written, and closes the journal to new ones once it
// is to be replaced. A command records its end in the journal it started
// in: a journal closed under it would lose that end, and with it the
// retry guard of an end that is unknown.
type journalGate struct {
	mu      sync.Mutex
	n       int
	retired bool
}

// enter counts a command about to be journaled; false once retired.
func (g *journalGate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.retired {
		return false
	}
	g.n++
	return true
}

func (g *journalGate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n--
}

// RetireJournal closes the bastion's journal to commands, for a journal
// about to be replaced, and returns 0; or, while commands journaled
// through it have yet to record their end, retires nothing and returns
// how many they are. A command that comes after is refused, not sent.
func (s *Server) RetireJournal() (unended int) {
	g := &s.gate
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n > 0 {
		return g.n
	}
	g.retired = true
	return 0
}

// KeepJournal undoes RetireJournal: the journal was not replaced after
// all.
func (s *Server) KeepJournal() {
	s.gate.mu.Lock()
	defer s.gate.mu.Unlock()
	s.gate.retired = false
}
