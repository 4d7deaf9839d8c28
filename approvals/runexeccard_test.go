package approvals

import (
	"errors"
	"testing"
	"time"

	"github.com/postern/postern/audit"
)

// A request through the socket of a run whose process has since executed
// another program (a new process, on the same pid) is refused as
// process_changed, and the run ends, under every mode that asks a
// person: no card shows the run as the program it no longer runs, and no
// "once" answer signs for a socket whose run has ended.
func TestRunSocketOfAnExecutedRunShowsNoCard(t *testing.T) {
	for _, mode := range []audit.Mode{audit.ModeSession, audit.ModePerCall} {
		t.Run(string(mode), func(t *testing.T) {
			w := newWorld(t)
			p := *w.e.Policy()
			p.Mode = mode
			w.e.SetPolicy(&p)
			run := w.launch("coder", 10)
			// The requester connected while the run was the program
			// launched; the run's process then executes another.
			w.f.Exec(10, w.f.Exe("other", "another program"), "other")
			ch := w.decide(w.runReq(run, 13))
			d, c := w.decisionOrCard(ch)
			if c != nil {
				w.answer(c.ID, VerdictOnce, 30)
				d = got(t, ch)
				t.Fatalf("a card was shown for run %s as %s (sha256 %s), a program its process no longer runs; answered once: allow=%v (%s)", run.ID, c.Run.Exe, c.Run.SHA256, d.Allow, d.Reason)
			}
			if d.Allow || d.Reason != audit.ReasonProcessChanged {
				t.Fatalf("a request through the socket of run %s, whose process executed another program: allow=%v (%s)", run.ID, d.Allow, d.Reason)
			}
			if run.Ended() != audit.ReasonProcessChanged {
				t.Fatalf("the run ended as %q", run.Ended())
			}
		})
	}
}

// A run whose process executes another program while a card for a
// request through its socket is up has ended: a "once" answer given
// then signs nothing.
func TestRunThatExecutesWhileItsCardWaitsSignsNothing(t *testing.T) {
	w := newWorld(t)
	p := *w.e.Policy()
	p.Mode = audit.ModePerCall
	w.e.SetPolicy(&p)
	run := w.launch("coder", 10)
	ch := w.decide(w.runReq(run, 13))
	c := w.card()
	w.f.Exec(10, w.f.Exe("other", "another program"), "other")
	// The card may be withdrawn first (TestCardOfARunThatExecutesIsWithdrawn).
	if err := w.e.Answer(c.ID, Answer{Verdict: VerdictOnce, Subject: -1, Approver: "test"}, w.f.Peer(30)); err != nil && !errors.Is(err, ErrNoCard) {
		t.Fatal(err)
	}
	if d := got(t, ch); d.Allow || d.Reason != audit.ReasonProcessChanged {
		t.Fatalf("a once answer for the socket of run %s, whose process executed another program while the card was up: allow=%v (%s)", run.ID, d.Allow, d.Reason)
	}
}

// A card for a request through a run's socket is withdrawn when the
// run's process executes another program while it waits, as when the
// process exits: the run has ended (process_changed), its card is no
// longer pending, and the request is refused without an answer.
func TestCardOfARunThatExecutesIsWithdrawn(t *testing.T) {
	w := newWorld(t)
	run := w.launch("coder", 10)
	ch := w.decide(w.runReq(run, 13))
	w.card()
	w.f.Exec(10, w.f.Exe("other", "another program"), "other")
	if d := got(t, ch); d.Allow || d.Reason != audit.ReasonProcessChanged {
		t.Fatalf("the request whose card waited while the run executed another program: allow=%v (%s)", d.Allow, d.Reason)
	}
	if cards, _ := w.e.Cards(); len(cards) != 0 {
		t.Fatalf("the card is still pending: %+v", cards[0].Run)
	}
	if run.Ended() != audit.ReasonProcessChanged {
		t.Fatalf("the run ended as %q", run.Ended())
	}
}

// decisionOrCard waits for the decision ch brings, or for a card to be
// shown first: then the card is returned, and the decision is still to
// come.
func (w *world) decisionOrCard(ch <-chan Decision) (Decision, *CardView) {
	w.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		select {
		case d := <-ch:
			return d, nil
		default:
		}
		if cards, _ := w.e.Cards(); len(cards) > 0 {
			return Decision{}, &cards[0]
		}
	}
	w.t.Fatal("no decision and no card")
	return Decision{}, nil
}
