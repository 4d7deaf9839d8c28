package approvals

import (
	"errors"
	"testing"

	"github.com/postern/postern/audit"
)

// A session answer that is not applied (the vault locked as it came, and
// took the card down) registers no run: postern sessions does not list
// the process it chose as a run approved through a card, and the audit
// log holds no run_registered for it.
func TestUnappliedSessionAnswerRegistersNoRun(t *testing.T) {
	w, log := newWorld(t), &eventLog{}
	w.e.SetAudit(log)
	_, ch, err := w.answerAcross(func() {
		// The vault locks as the answer is applied.
		w.setVault(true, 8)
		w.e.EpochChanged(true)
	})
	if err == nil {
		t.Fatal("a session answer across a lock was applied")
	}
	if d := got(t, ch); d.Allow {
		t.Fatalf("decision %+v", d)
	}
	runs, grants := w.e.Sessions()
	if len(runs) != 0 || len(grants) != 0 {
		t.Errorf("after a session answer that was not applied, runs %+v and grants %+v are listed", runs, grants)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	for _, ev := range log.events {
		if ev.Type == audit.EventRunRegistered {
			t.Errorf("a run was recorded registered (%s) for a session answer that was not applied", ev.Run)
		}
	}
}

// answerAcross puts up the card of pid 13's request and answers it for a
// session from pid 30, with at run as the engine reads the vault's state
// while it applies the answer; it returns the card, the request's
// decision to come and what Answer returned.
func (w *world) answerAcross(at func()) (CardView, <-chan Decision, error) {
	w.t.Helper()
	ch := w.decide(w.req(13))
	c := w.card()
	w.mu.Lock()
	w.atVault = at
	w.mu.Unlock()
	err := w.e.Answer(c.ID, Answer{Verdict: VerdictSession, Subject: -1, Approver: "test"}, w.f.Peer(30))
	return c, ch, err
}

// failingApprovals records every event but session_approved.
type failingApprovals struct{ eventLog }

func (l *failingApprovals) Append(ev audit.Event) error {
	if ev.Type == audit.EventSessionApproved {
		return errors.New("disk full")
	}
	return l.eventLog.Append(ev)
}

// A session answer whose approval the audit log cannot record is not
// applied, and leaves no run either.
func TestUnrecordedSessionAnswerRegistersNoRun(t *testing.T) {
	w := newWorld(t)
	w.e.SetAudit(&failingApprovals{})
	_, ch, err := w.answerAcross(func() {})
	if !errors.Is(err, ErrNotRecorded) {
		t.Fatalf("answer: %v", err)
	}
	if d := got(t, ch); d.Allow {
		t.Fatalf("decision %+v", d)
	}
	if runs, grants := w.e.Sessions(); len(runs) != 0 || len(grants) != 0 {
		t.Errorf("after a session answer that could not be recorded, runs %+v and grants %+v are listed", runs, grants)
	}
}
