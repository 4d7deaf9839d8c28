package approvals

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/postern/postern/audit"
)

// feedWorld is a world whose requests are asked per call (a card each),
// followed by an approver's board that takes the engine's changes as the
// control socket carries them (in JSON).
type feedWorld struct {
	*world
	board   CardBoard
	cancels map[string]context.CancelFunc // of the pending requests, by card
	waits   []<-chan Decision
}

func newFeedWorld(t *testing.T) *feedWorld {
	w := &feedWorld{world: newWorld(t), cancels: map[string]context.CancelFunc{}}
	w.setTimeout(time.Hour)
	return w
}

func (w *feedWorld) setTimeout(d time.Duration) {
	p := *w.e.Policy()
	p.Mode, p.CardTimeout, p.Cooldown = audit.ModePerCall, d, 0
	w.e.SetPolicy(&p)
}

// add makes a request and waits until its card is pending.
func (w *feedWorld) add(pid int) {
	w.t.Helper()
	before := map[string]bool{}
	for _, c := range first(w.e.Cards()) {
		before[c.ID] = true
	}
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan Decision, 1)
	go func() { ch <- w.e.Decide(ctx, w.req(pid)) }()
	w.waits = append(w.waits, ch)
	for {
		for _, c := range first(w.e.Cards()) {
			if !before[c.ID] {
				w.cancels[c.ID] = cancel
				return
			}
		}
		select {
		case d := <-ch:
			w.t.Fatalf("decided without a card: %+v", d)
		case <-time.After(time.Millisecond):
		}
	}
}

// expire makes a request whose card nobody answers before it times out.
func (w *feedWorld) expire(pid int) {
	w.t.Helper()
	w.setTimeout(time.Millisecond)
	defer w.setTimeout(time.Hour)
	if d := w.e.Decide(context.Background(), w.req(pid)); d.Reason != audit.ReasonTimeout {
		w.t.Fatalf("a card that times out: %+v", d)
	}
}

// pick returns a pending card's id, or "".
func (w *feedWorld) pick(r *rand.Rand) string {
	cards, _ := w.e.Cards()
	if len(cards) == 0 {
		return ""
	}
	return cards[r.IntN(len(cards))].ID
}

// follow brings the board up to the engine, over JSON.
func (w *feedWorld) follow() {
	w.t.Helper()
	d := w.e.CardsSince(w.board.Seq())
	if err := w.board.Apply(wire(w.t, d)); err != nil {
		w.t.Fatal(err)
	}
}

// wire passes d through JSON, as the control socket does.
func wire(t *testing.T, d CardsDelta) *CardsDelta {
	t.Helper()
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var out CardsDelta
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

// same fails the test unless the board shows what the engine holds.
func (w *feedWorld) same(when string) {
	w.t.Helper()
	want, v := w.e.Cards()
	if w.board.Seq() != v {
		w.t.Fatalf("%s: the board is at step %d, the engine at %d", when, w.board.Seq(), v)
	}
	a, _ := json.Marshal(w.board.Cards())
	b, _ := json.Marshal(want)
	if string(a) != string(b) {
		w.t.Fatalf("%s: the board shows\n%s\nthe engine holds\n%s", when, a, b)
	}
}

// An approver that follows the changes (taking them now after every
// change, now after several, now starting over from a snapshot as after
// a reconnection) shows exactly the engine's pending cards after random
// requests, answers, expiries, cancellations, locks and policy cards.
func TestCardBoardFollowsTheEngine(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, seed>>7))
	w := newFeedWorld(t)
	w.follow()
	for i := range 600 {
		switch op := r.IntN(20); {
		case op < 7:
			w.add([]int{13, 21, 11}[r.IntN(3)])
		case op < 10:
			if id := w.pick(r); id != "" {
				w.answer(id, []Verdict{VerdictDeny, VerdictOnce}[r.IntN(2)], 30)
			}
		case op < 12:
			w.expire(13)
		case op < 14:
			if id := w.pick(r); id != "" && w.cancels[id] != nil {
				w.cancels[id]()
				for slices.ContainsFunc(first(w.e.Cards()), func(c CardView) bool { return c.ID == id }) {
					time.Sleep(time.Millisecond)
				}
			}
		case op == 14:
			w.setVault(true, w.epoch+1)
			w.e.EpochChanged(true)
			w.setVault(false, w.epoch+1)
			w.e.EpochChanged(false)
		case op == 15:
			w.e.ProposePolicy([]string{"approval: session → none"}, func() error { return nil })
		case op == 16:
			w.e.WithdrawPolicy(audit.ReasonPolicyReplaced)
		case op == 17:
			w.board = CardBoard{} // a reconnection: the next change is a snapshot
		}
		if r.IntN(3) == 0 {
			w.follow()
			w.same("step " + itoa(i))
		}
	}
	w.follow()
	w.same("at the end")
	for _, c := range w.cancels {
		c()
	}
	for _, ch := range w.waits {
		got(t, ch)
	}
}

func first[A, B any](a A, _ B) A { return a }

// A change that is lost on its way is noticed: the next one does not
// follow the step the board holds, and the board refuses it and stays as
// it was, for the approver to start over from a snapshot.
func TestCardBoardNoticesALostChange(t *testing.T) {
	w := newFeedWorld(t)
	w.follow()
	w.add(13)
	lost := w.e.CardsSince(w.board.Seq())
	w.add(21)
	next := w.e.CardsSince(lost.Seq)
	if len(lost.Cards) != 1 || len(next.Cards) != 1 || next.Since != lost.Seq {
		t.Fatalf("changes: %+v then %+v", lost, next)
	}
	before := w.board.Cards()
	if err := w.board.Apply(wire(t, next)); !errors.Is(err, ErrCardsGap) {
		t.Fatalf("a change applied over a lost one: %v", err)
	}
	if !slices.EqualFunc(before, w.board.Cards(), func(a, b CardView) bool { return a.ID == b.ID }) {
		t.Fatal("a refused change altered the board")
	}
	var fresh CardBoard
	if err := fresh.Apply(wire(t, next)); !errors.Is(err, ErrCardsGap) {
		t.Fatalf("a change applied on a board that never had a snapshot: %v", err)
	}
	if err := w.board.Apply(wire(t, w.e.CardsSince(0))); err != nil {
		t.Fatal(err)
	}
	w.same("after the snapshot")
}

// A change carries only what changed: the card added, the id of the card
// gone, and nothing about a card that came and went in between.
func TestCardsSinceCarriesOnlyTheChanges(t *testing.T) {
	w := newFeedWorld(t)
	w.add(13)
	w.add(21)
	w.follow()
	cards, _ := w.e.Cards()
	w.answer(cards[0].ID, VerdictDeny, 30)
	w.expire(13)
	w.add(11)
	d := w.e.CardsSince(w.board.Seq())
	if d.Reset || len(d.Cards) != 1 || d.Cards[0].Requester[0].PID != 11 || !slices.Equal(d.Gone, []string{cards[0].ID}) {
		t.Fatalf("the changes: %+v", d)
	}
	if err := w.board.Apply(wire(t, d)); err != nil {
		t.Fatal(err)
	}
	w.same("after the changes")
}

// An approver so far behind that the engine has forgotten some of the
// cards gone since is sent a snapshot, and shows the engine's cards.
func TestCardsSinceSendsASnapshotAfterAGap(t *testing.T) {
	w := newFeedWorld(t)
	w.add(13)
	w.follow()
	behind := w.board.Seq()
	w.answer(first(w.e.Cards())[0].ID, VerdictDeny, 30)
	for range maxGone {
		w.expire(21)
	}
	w.add(11)
	d := w.e.CardsSince(behind)
	if !d.Reset || len(d.Cards) != 1 {
		t.Fatalf("after %d cards gone: %+v", maxGone+1, d)
	}
	if err := w.board.Apply(wire(t, d)); err != nil {
		t.Fatal(err)
	}
	w.same("after the snapshot")
	// A step the engine never reached (another gateway's) gets a
	// snapshot too.
	if d := w.e.CardsSince(d.Seq + 1000); !d.Reset {
		t.Fatalf("a step from the future: %+v", d)
	}
}

// An answer names its card by id: a card never takes the id of a pending
// card, nor of one that went lately, to which a late answer may be meant.
func TestCardIDsAreNotReused(t *testing.T) {
	w := newWorld(t)
	ch := w.decide(w.req(13))
	first := w.card()
	add := func(id string) *Card {
		c := &Card{View: CardView{ID: id, Created: time.Now()}, done: make(chan struct{})}
		w.e.mu.Lock()
		w.e.addCardLocked(c)
		w.e.mu.Unlock()
		t.Cleanup(func() {
			w.e.mu.Lock()
			if w.e.cards[c.View.ID] == c {
				w.e.dropCardLocked(c)
			}
			w.e.mu.Unlock()
		})
		return c
	}
	if c := add(first.ID); c.View.ID == first.ID {
		t.Fatalf("a second pending card took the id %s", first.ID)
	}
	w.answer(first.ID, VerdictDeny, 30)
	got(t, ch)
	if c := add(first.ID); c.View.ID == first.ID {
		t.Fatalf("a card took the id %s of a card answered just before", first.ID)
	}
}
