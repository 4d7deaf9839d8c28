package approvals

import (
	"time"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/expiry"
)

// A card that nobody answers within card_timeout refuses its request.
// The timer that waits for it (waitAnswer) runs on the monotonic clock,
// which stops while the machine sleeps: a card shown before a suspend
// would still be up, and could be approved, for as long again after it.
// So the cards are also timed out on either clock (expiry.Passed) where
// they are answered and where they are listed.

// timeOutLocked refuses card c as unanswered in time, and starts its
// subject's cooldown; e.mu held, c pending.
func (e *Engine) timeOutLocked(c *Card, now time.Time) {
	e.coolLocked(c.cooldownAs, now, c.cooldown)
	e.closeCardLocked(c, Answer{Verdict: VerdictDeny, withdrawn: audit.ReasonTimeout})
	e.log.Info("card unanswered", "card", c.View.ID)
}

// expireCardsLocked times out every pending card whose card_timeout
// passed on either clock; e.mu held. It looks at the cards only once
// the earliest end among them may have come.
func (e *Engine) expireCardsLocked(now time.Time) {
	if e.cardsEnd.IsZero() || !expiry.Passed(now, e.cardsEnd) {
		return
	}
	e.cardsEnd = time.Time{}
	for _, c := range e.cards {
		switch {
		case c.expires.IsZero():
		case expiry.Passed(now, c.expires):
			e.timeOutLocked(c, now)
		default:
			e.noteCardEndLocked(c)
		}
	}
}

// noteCardEndLocked keeps in e.cardsEnd the earliest end of the pending
// cards, with pending card c's; e.mu held.
func (e *Engine) noteCardEndLocked(c *Card) {
	if !c.expires.IsZero() && (e.cardsEnd.IsZero() || c.expires.Round(0).Before(e.cardsEnd.Round(0))) {
		e.cardsEnd = c.expires
	}
}
