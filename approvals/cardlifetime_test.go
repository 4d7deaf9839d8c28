package approvals

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/postern/postern/audit"
)

// Under a session_lifetime, a session ends once it has passed, while its
// run lives: the card's Covers line, which an approval covers, says so,
// where it read as if the session lasted until the run exits.
func TestCardCoversSaysTheSessionLifetime(t *testing.T) {
	w := newWorld(t)
	p := *w.e.Policy()
	p.Lifetime = 2 * time.Hour
	w.e.SetPolicy(&p)
	ch := w.decide(w.req(13))
	c := w.card()
	if !strings.Contains(c.Covers, "at most 2h0m0s after the approval") {
		t.Errorf("under a session lifetime of %v, the card says it covers %q", p.Lifetime, c.Covers)
	}
	w.answer(c.ID, VerdictDeny, 30)
	got(t, ch)
}

// A card's timeout counts the time the machine slept, as a grant's
// lifetime does: a card shown before a laptop's lid closed is not
// listed, nor approved, the morning after, when the timer that refuses
// it, on the monotonic clock, has not fired yet. Its request is refused
// as unanswered in time.
func TestCardTimeoutCountsASuspend(t *testing.T) {
	for _, listed := range []bool{true, false} {
		w := newWorld(t)
		sleep := sleepable(t, w)
		p := *w.e.Policy()
		p.CardTimeout = time.Minute
		w.e.SetPolicy(&p)
		ch := w.decide(w.req(13))
		c := w.card()
		sleep(2 * time.Hour)
		if listed {
			if cards, _ := w.e.Cards(); len(cards) != 0 {
				t.Errorf("a card whose timeout passed while the machine slept is listed: %+v", cards[0].ID)
			}
			if d := w.e.CardsSince(0); len(d.Cards) != 0 {
				t.Errorf("a card whose timeout passed while the machine slept is sent to a console: %+v", d.Cards[0].ID)
			}
		}
		err := w.e.Answer(c.ID, Answer{Verdict: VerdictSession, Subject: -1, Approver: "test"}, w.f.Peer(30))
		if !errors.Is(err, ErrNoCard) {
			t.Errorf("listed first %v: an answer to a card whose timeout passed while the machine slept: %v, want %v", listed, err, ErrNoCard)
		}
		if d := got(t, ch); d.Allow || d.Reason != audit.ReasonTimeout {
			t.Fatalf("listed first %v: the request of a card whose timeout passed while the machine slept: allowed %v (%s), want denied as timeout", listed, d.Allow, d.Reason)
		}
	}
}
