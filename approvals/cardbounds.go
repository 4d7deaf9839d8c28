package approvals

import (
	"time"

	"github.com/postern/postern/internal/pace"
)

// How many cards a run puts in front of the person. Every card is a
// question the person must read, and a card_shown record.
//
// A run has at most maxRunCards cards up at once: past that, its
// requests are refused without a card (card_limit), so that a run
// holding a thousand requests open cannot bury the card the person is
// looking for under a thousand others.
//
// A requester that goes away while its card is up (canceled) has had
// the person look at a card for nothing; a run that did so in a loop
// would flash cards at the person. A subject (a run, else a process) may
// withdraw withdrawBurst cards at once, then one every withdrawEvery;
// past that, a withdrawal starts card_cooldown, as an unanswered card
// does. An honest requester interrupted now and then never meets it.
const (
	maxRunCards = 8

	withdrawBurst = 8
	withdrawEvery = 6 * time.Second
	// maxWithdrawers bounds the subjects followed (package pace).
	maxWithdrawers = 4096
)

// runCardsFullLocked reports whether subject subj, a run, has as many
// cards up as it may; e.mu held. Requests that are no run's are not
// bounded here (the person's own processes may wait on many).
func (e *Engine) runCardsFullLocked(subj *Run) bool {
	if subj.ID == "" {
		return false
	}
	n := 0
	for _, c := range e.cards {
		if c.cooldownAs == subj.ID {
			n++
		}
	}
	return n >= maxRunCards
}

// withdrawnSet is a new set of withdrawal buckets.
func withdrawnSet() *pace.Set[struct{}] {
	return &pace.Set[struct{}]{Burst: withdrawBurst, Rate: float64(time.Second) / float64(withdrawEvery), Max: maxWithdrawers}
}

// withdrawCard removes card c, whose request went away, and starts the
// cooldown of its subject when the subject withdraws cards faster than
// its pace.
func (e *Engine) withdrawCard(c *Card, cooldown time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cards[c.View.ID] != c {
		return
	}
	e.dropCardLocked(c)
	now := e.now()
	if !e.withdrawn.Take(e.withdrawn.Get(c.cooldownAs, now), now) {
		e.cooldown[c.cooldownAs] = now.Add(cooldown)
		e.log.Warn("cards withdrawn faster than a person reads them: no new card for card_cooldown", "card", c.View.ID)
	}
}
