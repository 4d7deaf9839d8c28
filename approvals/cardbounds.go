package approvals

import (
	"context"
	"errors"
	"time"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/pace"
	"github.com/postern/postern/internal/procid"
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
//
// A person who denies a card says no; a run that asks again at once, in
// a loop, would wear the person down until a card is approved by
// mistake (the push fatigue known from phone sign-in prompts). A subject
// may be denied deniedBurst cards at once, then one every deniedEvery;
// past that, a denial starts card_cooldown. Each card also says how many
// of the subject's cards were denied in a row before it. An honest
// agent told no once or twice, which then asks about something else,
// never meets the cooldown.
const (
	maxRunCards = 8

	withdrawBurst = 8
	withdrawEvery = 6 * time.Second

	deniedBurst = 2
	deniedEvery = 2 * time.Minute

	// maxPaced bounds the subjects each pace follows (package pace).
	maxPaced = 4096
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
	return &pace.Set[struct{}]{Burst: withdrawBurst, Rate: perSecond(withdrawEvery), Max: maxPaced}
}

// denials is what a subject's next card says of the denials before it.
type denials struct {
	n    int       // cards denied in a row since the subject's last approval
	last time.Time // when the last of them was denied
}

// deniedSet is a new set of denial buckets.
func deniedSet() *pace.Set[denials] {
	return &pace.Set[denials]{Burst: deniedBurst, Rate: perSecond(deniedEvery), Max: maxPaced}
}

// perSecond is the rate of one every d.
func perSecond(d time.Duration) float64 { return float64(time.Second) / float64(d) }

// leaveCard counts request r, which waited on card c, as gone. A request
// that joined the card leaves it up for the others. When the card's own
// request goes, the card no longer shows what asks: it is withdrawn, the
// requests that joined it ask again on cards that show them, and the
// subject's cooldown starts if it withdraws cards faster than its pace.
func (e *Engine) leaveCard(c *Card, r *Request, cooldown time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cards[c.View.ID] != c {
		return
	}
	if r != c.req {
		c.joined--
		return
	}
	e.closeCardLocked(c, Answer{Verdict: VerdictDeny, withdrawn: audit.ReasonCanceled, reask: c.joined > 0})
	now := e.now()
	if !e.withdrawn.Take(e.withdrawn.Get(c.cooldownAs, now), now) {
		e.coolLocked(c.cooldownAs, now, cooldown)
		e.log.Warn("cards withdrawn faster than a person reads them: no new card for card_cooldown", "card", c.View.ID)
	}
}

// withdrawnWhy is the reason a request whose context ended (ctx) gives
// for its withdrawn card: the requester ran another program while the
// card waited (the context's cause wraps procid.ErrChanged; nothing is
// signed for it, and a requester that does so is not an honest ssh), or
// it went away (hung up, exited).
func withdrawnWhy(ctx context.Context) audit.Reason {
	if errors.Is(context.Cause(ctx), procid.ErrChanged) {
		return audit.ReasonIdentityMismatch
	}
	return audit.ReasonCanceled
}

// answeredLocked counts a person's answer to card c: a denial past the
// subject's pace starts its cooldown, an approval ends its row of
// denials; e.mu held.
func (e *Engine) answeredLocked(c *Card, approved bool) {
	if approved {
		if d, ok := e.denied.Peek(c.cooldownAs); ok {
			d.Val = denials{}
		}
		return
	}
	now := e.now()
	d := e.denied.Get(c.cooldownAs, now)
	d.Val.n++
	d.Val.last = now
	if !e.denied.Take(d, now) {
		e.coolLocked(c.cooldownAs, now, e.Policy().Cooldown)
		e.log.Warn("cards denied in quick succession: no new card for card_cooldown", "card", c.View.ID, "denied", d.Val.n)
	}
}

// deniedBeforeLocked says how many of subject key's cards were denied in
// a row, and when the last was; e.mu held. It looks at key's own entry
// only: past maxPaced subjects, new ones share a bucket (package pace),
// whose count is no one subject's to show.
func (e *Engine) deniedBeforeLocked(key string) denials {
	if d, ok := e.denied.Peek(key); ok {
		return d.Val
	}
	return denials{}
}

// coolLocked refuses subject key's requests without a card until now+d;
// e.mu held. Cooldowns that have ended are dropped as the map grows, so
// that it holds at most twice the live ones (and 64).
func (e *Engine) coolLocked(key string, now time.Time, d time.Duration) {
	if len(e.cooldown) >= e.coolRoom {
		for k, until := range e.cooldown {
			if !now.Before(until) {
				delete(e.cooldown, k)
			}
		}
		e.coolRoom = max(64, 2*len(e.cooldown))
	}
	e.cooldown[key] = now.Add(d)
}
