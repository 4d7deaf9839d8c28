package approvals

import (
	"context"
	"testing"
	"time"

	"github.com/postern/postern/audit"
)

// A run that withdraws its requests while their cards are up, in a loop,
// would flash cards at the person and fill the audit log: past its pace,
// a withdrawal starts card_cooldown, and the run's next request is
// refused without a card. Another requester's cards come as ever.
func TestWithdrawnCardsPaced(t *testing.T) {
	w := newWorld(t)
	run := w.launch("coder", 10)
	for i := range withdrawBurst + 1 {
		ctx, cancel := context.WithCancel(context.Background())
		ch := make(chan Decision, 1)
		go func() { ch <- w.e.Decide(ctx, w.runReq(run, 13)) }()
		w.card()
		cancel()
		if d := got(t, ch); d.Reason != audit.ReasonCanceled {
			t.Fatalf("withdrawal %d: %+v", i+1, d)
		}
	}
	if d := w.e.Decide(context.Background(), w.runReq(run, 13)); d.Reason != audit.ReasonCooldown || d.Card != "" {
		t.Fatalf("after %d withdrawn cards: %s, card %q", withdrawBurst+1, d.Reason, d.Card)
	}
	ch := w.decide(w.req(21))
	c := w.card()
	w.answer(c.ID, VerdictDeny, 30)
	if d := got(t, ch); d.Reason != audit.ReasonDenied {
		t.Fatalf("another requester: %+v", d)
	}
}

// A run has at most maxRunCards cards up at once: a run holding more
// requests open is refused without a card, and gets one again once a
// card is answered. Another requester's cards come as ever.
func TestRunsCardsBounded(t *testing.T) {
	w := newWorld(t)
	run := w.launch("coder", 10)
	perCall := func(r *Request) *Request { r.Key.Confirm = true; return r }
	var waiting []<-chan Decision
	for range maxRunCards {
		waiting = append(waiting, w.decide(perCall(w.runReq(run, 13))))
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		if cards, _ := w.e.Cards(); len(cards) == maxRunCards {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the run's cards did not come up")
		}
	}
	if d := w.e.Decide(context.Background(), perCall(w.runReq(run, 13))); d.Reason != audit.ReasonCardLimit || d.Card != "" {
		t.Fatalf("a request past the run's cards: %s, card %q", d.Reason, d.Card)
	}
	other := w.decide(perCall(w.req(21)))
	cards, _ := w.e.Cards()
	for len(cards) != maxRunCards+1 {
		time.Sleep(2 * time.Millisecond)
		cards, _ = w.e.Cards()
	}
	for _, c := range cards {
		w.answer(c.ID, VerdictDeny, 30)
	}
	for _, ch := range append(waiting, other) {
		if d := got(t, ch); d.Reason != audit.ReasonDenied {
			t.Fatalf("a request whose card was denied: %+v", d)
		}
	}
	again := w.decide(perCall(w.runReq(run, 13)))
	w.answer(w.card().ID, VerdictOnce, 30)
	if d := got(t, again); !d.Allow {
		t.Fatalf("the run's request once its cards were answered: %+v", d)
	}
}
