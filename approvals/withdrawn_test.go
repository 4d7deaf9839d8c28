package approvals

import (
	"context"
	"testing"

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
