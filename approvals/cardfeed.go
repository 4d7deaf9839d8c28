package approvals

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
)

// The pending cards change by numbered steps: every card shown, changed,
// answered, timed out or withdrawn moves the engine's change sequence on
// by one. An approver that follows the cards keeps a [CardBoard] and
// takes from [Engine.CardsSince] only what changed after the step it
// holds: the cards added (or changed) and the ids of those gone, instead
// of the whole list on every change. An approver that starts, or fell so
// far behind that the engine no longer remembers which cards went away
// (it keeps the last maxGone), is sent every pending card instead: a
// snapshot.

// maxGone is how many departed cards the engine remembers for approvers
// that follow the changes.
const maxGone = 1024

// CardsDelta brings a [CardBoard] from the step Since to the step Seq of
// the engine's change sequence. A snapshot (Reset) holds every pending
// card and replaces what the board held.
type CardsDelta struct {
	Seq   uint64 `json:"seq"`
	Since uint64 `json:"since"`
	Reset bool   `json:"reset,omitempty"`
	// Cards are the cards added or changed since Since (with Reset, all
	// pending cards), oldest first.
	Cards []CardView `json:"cards,omitempty"`
	// Gone are the ids of the cards no longer pending (answered, timed
	// out or withdrawn) that were pending at Since.
	Gone []string `json:"gone,omitempty"`
	// More says that the change goes on in the next delta, which
	// follows step Seq and is at Seq too: a change larger than one
	// line of the control stream holds is sent in parts. A board takes
	// each part; a follower shows the cards once the last has come.
	More bool `json:"more,omitempty"`
}

// goneCard remembers a card that left, for CardsSince.
type goneCard struct {
	id         string
	added, seq uint64 // the steps it came and went at
}

// addCardLocked shows card c to the approvers that follow; e.mu held.
// An answer names its card by id: c is given another id while its own is
// the id of a pending card, or of one the engine remembers gone (an
// answer to it may still come).
func (e *Engine) addCardLocked(c *Card) {
	for e.cards[c.View.ID] != nil || slices.ContainsFunc(e.gone, func(g goneCard) bool { return g.id == c.View.ID }) {
		c.View.ID = newCardID()
	}
	e.cards[c.View.ID] = c
	e.noteCardEndLocked(c)
	e.notify()
	c.seq = e.version
	e.bySeq = append(e.bySeq, c)
}

// dropCardLocked takes card c off the pending cards; e.mu held.
func (e *Engine) dropCardLocked(c *Card) {
	delete(e.cards, c.View.ID)
	if i, ok := slices.BinarySearchFunc(e.bySeq, c.seq, func(o *Card, seq uint64) int { return cmp.Compare(o.seq, seq) }); ok {
		e.bySeq = slices.Delete(e.bySeq, i, i+1)
	}
	e.notify()
	e.gone = append(e.gone, goneCard{id: c.View.ID, added: c.seq, seq: e.version})
	if len(e.gone) > maxGone {
		n := len(e.gone) - maxGone/2
		e.goneFloor = e.gone[n-1].seq
		e.gone = slices.Delete(e.gone, 0, n)
	}
}

// CardsSince returns what changed in the pending cards after step since
// of the change sequence: a snapshot when since is 0, when the engine no
// longer remembers every card gone since then, or when since is a step
// it never reached (another gateway's).
func (e *Engine) CardsSince(since uint64) CardsDelta {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.expireCardsLocked(e.now())
	d := CardsDelta{Seq: e.version, Since: since}
	if since == 0 || since < e.goneFloor || since > e.version {
		d.Since, d.Reset = 0, true
		since = 0
	}
	// The cards that came after since, found without a look at the
	// others: a change costs what it carries, however many cards wait.
	i, _ := slices.BinarySearchFunc(e.bySeq, since+1, func(o *Card, seq uint64) int { return cmp.Compare(o.seq, seq) })
	for _, c := range e.bySeq[i:] {
		d.Cards = append(d.Cards, c.View)
	}
	slices.SortFunc(d.Cards, cardOrder)
	if since > 0 {
		i := len(e.gone)
		for i > 0 && e.gone[i-1].seq > since {
			i--
		}
		for _, g := range e.gone[i:] {
			if g.added <= since {
				d.Gone = append(d.Gone, g.id)
			}
		}
	}
	return d
}

// cardOrder puts cards oldest first (ties by id, so that every copy of
// a list is in one order).
func cardOrder(a, b CardView) int {
	if c := a.Created.Compare(b.Created); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

// ErrCardsGap: a change of the pending cards was applied on a board that
// is not at the step it follows, so a change in between was missed. The
// approver must start over from a snapshot.
var ErrCardsGap = errors.New("a change of the pending cards was missed")

// CardBoard is an approver's copy of the pending cards, kept up to date
// by [CardsDelta]s. The zero board is empty and waits for a snapshot. It
// keeps its cards in their order, so that a change costs what it adds
// and removes, not a sort of every card (a console takes the cards after
// each change).
type CardBoard struct {
	seq    uint64
	synced bool
	cards  []CardView          // oldest first (cardOrder), one a card id
	ids    map[string]struct{} // the ids in cards
}

// Apply brings the board to d.Seq. A change that does not follow the
// step the board holds (or a change before any snapshot) is refused
// with ErrCardsGap, and the board is left as it was.
func (b *CardBoard) Apply(d *CardsDelta) error {
	if d.Reset {
		b.cards = b.cards[:0]
		b.ids = make(map[string]struct{}, len(d.Cards))
	} else if !b.synced || d.Since != b.seq {
		if !b.synced {
			return fmt.Errorf("%w: a change came before the list it changes", ErrCardsGap)
		}
		return fmt.Errorf("%w: the change follows step %d, the cards shown are at step %d", ErrCardsGap, d.Since, b.seq)
	}
	if len(d.Gone) > 0 {
		gone := make(map[string]bool, len(d.Gone))
		for _, id := range d.Gone {
			gone[id] = true
			delete(b.ids, id)
		}
		b.cards = slices.DeleteFunc(b.cards, func(c CardView) bool { return gone[c.ID] })
	}
	for i := range d.Cards {
		b.put(&d.Cards[i])
	}
	b.seq, b.synced = d.Seq, true
	return nil
}

// put adds card c to the board in its place, or puts it in the place of
// the card of the same id.
func (b *CardBoard) put(c *CardView) {
	if _, ok := b.ids[c.ID]; ok {
		at := slices.IndexFunc(b.cards, func(o CardView) bool { return o.ID == c.ID })
		b.cards = slices.Delete(b.cards, at, at+1)
	}
	b.ids[c.ID] = struct{}{}
	// A new card is the newest, as a rule: its place is at the end.
	at := len(b.cards)
	if at > 0 && cardOrder(b.cards[at-1], *c) > 0 {
		at, _ = slices.BinarySearchFunc(b.cards, *c, cardOrder)
	}
	b.cards = slices.Insert(b.cards, at, *c)
}

// Seq is the step of the change sequence the board is at (0 before its
// first snapshot).
func (b *CardBoard) Seq() uint64 { return b.seq }

// Has reports whether card id is on the board.
func (b *CardBoard) Has(id string) bool {
	_, ok := b.ids[id]
	return ok
}

// Cards returns the cards on the board, oldest first.
func (b *CardBoard) Cards() []CardView {
	return append(make([]CardView, 0, len(b.cards)), b.cards...)
}

// Cards returns the pending cards, oldest first, and the step of the
// change sequence they are at, which WaitCards can wait past.
func (e *Engine) Cards() ([]CardView, uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.expireCardsLocked(e.now())
	out := make([]CardView, 0, len(e.cards))
	for _, c := range e.cards {
		out = append(out, c.View)
	}
	slices.SortFunc(out, cardOrder)
	return out, e.version
}

// WaitCards waits until the pending cards change after step version, or
// ctx ends.
func (e *Engine) WaitCards(ctx context.Context, version uint64) {
	select {
	case <-e.CardsChanged(version):
	case <-ctx.Done():
	}
}

// CardsChanged returns a channel that is closed once the pending cards
// change after step version (at once if they did already), for a
// follower that waits for other things too.
func (e *Engine) CardsChanged(version uint64) <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.version != version {
		return changedAlready
	}
	return e.changed
}

// changedAlready is a closed channel: the cards changed already.
var changedAlready = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// newCardID returns a new random card id.
func newCardID() string { return "C" + randomHex(4) }
