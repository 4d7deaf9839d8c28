package approvals

import (
	"context"
	"errors"
	"time"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/safetext"
)

// askpassAnswer shows a card in an SSH_ASKPASS dialog until ctx ends,
// with no character a dialog could read as markup (safetext.Unmarked);
// a yes that comes before the dialog was up for ReadTime, counted from
// when it appeared or when another dialog that may have covered it went
// away (askpassUp), is not taken, and the card is asked again, once;
// yes approves it as the policy asks (a session for the preselected
// subject, or this call). A card approved by a word typed out (a per-call
// login: CardView.Word) asks for the word instead, as the consoles do,
// and anything else denies it.
func (e *Engine) askpassAnswer(ctx context.Context, c CardView) {
	var ok bool
	var err error
	for try := 1; ; try++ {
		asked := time.Now()
		ok, err = e.askpassAsk(ctx, c)
		up := e.askpassUp(asked)
		if err != nil || !ok || up >= ReadTime {
			break
		}
		e.log.Warn("askpass approval not taken: it came before the card could be read", "card", c.ID, "after", up.Round(time.Millisecond))
		if try == 2 {
			return // the card stays up for the other approvers, or times out
		}
	}
	if err != nil {
		// Shown only while reachable: the program was there, and could
		// not ask (it would not run, or it changed).
		if ctx.Err() == nil {
			e.log.Warn("askpass could not ask", "card", c.ID, "err", err)
		}
		return
	}
	a := Answer{Verdict: VerdictDeny, Approver: "askpass"}
	if ok {
		a = Answer{Verdict: VerdictOnce, Subject: -1, Approver: "askpass"}
		if c.Mode == audit.ModeSession {
			a.Verdict, a.Subject = VerdictSession, c.Selected
		}
	}
	if err := e.Answer(c.ID, a, nil); err != nil && !errors.Is(err, ErrNoCard) {
		e.log.Warn("askpass answer not applied", "card", c.ID, "err", err)
	}
}

// askpassAsk asks card c once in an askpass dialog (see askpassAnswer).
func (e *Engine) askpassAsk(ctx context.Context, c CardView) (bool, error) {
	if w := c.Word(); w != "" {
		typed, err := e.askpass.Word(ctx, safetext.Unmarked(c.Text()+"\n\nType "+c.QuotedWord()+" to approve this one use; anything else denies it."))
		return typed == w, err
	}
	return e.askpass.Confirm(ctx, safetext.Unmarked(c.Text()))
}

// askpassUp returns how long a dialog that appeared at asked and has just
// gone was uncovered: since it appeared, or since another dialog went
// away after that (the one above it, whose going gave it the keyboard).
// It notes that a dialog went away now.
func (e *Engine) askpassUp(asked time.Time) time.Duration {
	now := time.Now()
	gone := e.askpassGone.Load()
	for gone < now.UnixNano() && !e.askpassGone.CompareAndSwap(gone, now.UnixNano()) {
		gone = e.askpassGone.Load()
	}
	since := asked
	if t := time.Unix(0, gone); t.After(since) && t.Before(now) {
		since = t
	}
	return now.Sub(since)
}
