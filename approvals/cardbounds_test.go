package approvals

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/procid"
)

// A run that withdraws its requests while their cards are up, in a loop,
// would flash cards at the person and fill the audit log: past its pace,
// a withdrawal starts card_cooldown, and the run's next request is
// refused without a card. Another requester's cards come as ever. A
// requester that went away is recorded as canceled, one that ran another
// program while its card waited (its context's cause says so) as
// identity_mismatch; both are withdrawals.
func TestWithdrawnCardsPaced(t *testing.T) {
	w := newWorld(t)
	run := w.launch("coder", 10)
	for i := range withdrawBurst + 1 {
		ctx, cancel := context.WithCancelCause(context.Background())
		ch := make(chan Decision, 1)
		go func() { ch <- w.e.Decide(ctx, w.runReq(run, 13)) }()
		w.card()
		why, want := error(nil), audit.ReasonCanceled
		if i%2 == 1 {
			why, want = fmt.Errorf("pid 13: %w", procid.ErrChanged), audit.ReasonIdentityMismatch
		}
		cancel(why)
		if d := got(t, ch); d.Reason != want {
			t.Fatalf("withdrawal %d: %s, want %s", i+1, d.Reason, want)
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
	// The run's approved once (denied in a row, they would start a
	// cooldown), the other's denied.
	for _, c := range cards {
		v := VerdictOnce
		if c.Run.ID != run.ID {
			v = VerdictDeny
		}
		w.answer(c.ID, v, 30)
	}
	for _, ch := range waiting {
		if d := got(t, ch); !d.Allow {
			t.Fatalf("a request whose card was approved: %+v", d)
		}
	}
	if d := got(t, other); d.Reason != audit.ReasonDenied {
		t.Fatalf("a request whose card was denied: %+v", d)
	}
	again := w.decide(perCall(w.runReq(run, 13)))
	w.answer(w.card().ID, VerdictOnce, 30)
	if d := got(t, again); !d.Allow {
		t.Fatalf("the run's request once its cards were answered: %+v", d)
	}
}

// A run that asks again each time the person says no would wear the
// person down until a card is approved by mistake: past deniedBurst
// denials, a denial starts card_cooldown and the run's next request is
// refused without a card. Each card says how many of the run's cards
// were denied in a row before it; an approval ends the row. Another
// requester's cards come as ever.
func TestDeniedCardsPaced(t *testing.T) {
	w := newWorld(t)
	run := w.launch("coder", 10)
	for i := range deniedBurst + 1 {
		ch := w.decide(w.runReq(run, 13))
		c := w.card()
		if c.DeniedBefore != i {
			t.Fatalf("card %d says %d denied before it", i+1, c.DeniedBefore)
		}
		if want := "Denied before: this run's last " + cardsWere(i) + " denied, the last at "; i > 0 && !strings.Contains(c.Text(), want) {
			t.Fatalf("card %d does not say %q:\n%s", i+1, want, c.Text())
		}
		w.answer(c.ID, VerdictDeny, 30)
		if d := got(t, ch); d.Reason != audit.ReasonDenied {
			t.Fatalf("denial %d: %+v", i+1, d)
		}
	}
	if d := w.e.Decide(context.Background(), w.runReq(run, 13)); d.Reason != audit.ReasonCooldown || d.Card != "" {
		t.Fatalf("after %d denied cards: %s, card %q", deniedBurst+1, d.Reason, d.Card)
	}
	// The person sees it in "postern sessions".
	runs, _ := w.e.Sessions()
	if len(runs) != 1 || runs[0].ID != run.ID || !runs[0].NoCardsUntil.After(time.Now()) {
		t.Fatalf("the run in its cooldown, listed: %+v", runs)
	}

	// Another requester: denied once, then approved, then asked again.
	for i, v := range []Verdict{VerdictDeny, VerdictOnce, VerdictDeny} {
		ch := w.decide(w.req(21))
		c := w.card()
		if want := []int{0, 1, 0}[i]; c.DeniedBefore != want {
			t.Fatalf("another requester's card %d says %d denied before it, want %d", i+1, c.DeniedBefore, want)
		}
		if i == 0 && strings.Contains(c.Text(), "Denied before") {
			t.Fatalf("a first card speaks of denials:\n%s", c.Text())
		}
		w.answer(c.ID, v, 30)
		if d := got(t, ch); d.Allow != (v == VerdictOnce) {
			t.Fatalf("another requester's card %d answered %s: %+v", i+1, v, d)
		}
	}
}

// Cooldowns that have ended are dropped: a requester that makes up new
// subjects (new processes) one after another cannot grow the map.
func TestEndedCooldownsDropped(t *testing.T) {
	w := newWorld(t)
	t0 := time.Now()
	w.e.mu.Lock()
	defer w.e.mu.Unlock()
	for i := range 10000 {
		w.e.coolLocked(strconv.Itoa(i), t0.Add(time.Duration(i)*time.Second), time.Second)
	}
	if n := len(w.e.cooldown); n > 64 {
		t.Fatalf("%d cooldowns held, one of them live", n)
	}
	if until, ok := w.e.cooldown["9999"]; !ok || !until.Equal(t0.Add(10000*time.Second)) {
		t.Fatalf("the live cooldown was dropped (%v, %v)", until, ok)
	}
}
