package approvals

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/procid"
)

// ask shows a card and waits for its answer or its timeout. Requests that
// would ask the same session question wait on one card; an answer covers
// exactly the request its card was shown for, so a request that waited on
// another's card is told to decide again (again), under the policy, the
// host inventory and the grants as they are after the answer.
func (e *Engine) ask(ctx context.Context, r *Request, mode audit.Mode, chain procid.Chain, argv []string, dest *DestView, unverified string, perCall []string, at vaultRead, p *Policy) (d Decision, again bool) {
	subjects, sel, err := e.subjects(r, chain, argv, p)
	if err != nil {
		e.log.Info("refusing: "+err.Error(), "pid", r.Requester.PID)
		switch {
		case errors.Is(err, ErrNotDescendant):
			return deny(mode, audit.ReasonIdentityMismatch), false
		case errors.Is(err, procid.ErrNoResources):
			return deny(mode, audit.ReasonOutOfResources), false
		}
		return deny(mode, audit.ReasonProcessExited), false
	}
	subj := subjects[sel]
	// A process that does not show its program (not dumpable) would not
	// show an exec either: no session is bound to it. subjects offers
	// such a process only where it offers nothing else.
	unseen := mode == audit.ModeSession && subj.Process.Exe.Hidden
	if unseen {
		mode = audit.ModePerCall
	}
	coolKey := subjectKey(subj)
	e.mu.Lock()
	if until, ok := e.cooldown[coolKey]; ok && e.now().Before(until) {
		e.mu.Unlock()
		return deny(mode, audit.ReasonCooldown), false
	}
	joinKey := ""
	if mode == audit.ModeSession {
		// One question: the subject, the key, and the verified host or
		// the signature's namespace (destKey) the card names.
		joinKey = coolKey + "|" + r.Key.Fingerprint
		if k, ok := destKey(r, dest); ok && k != "" {
			joinKey += "|" + k
		}
		if c := e.joinLocked(joinKey); c != nil {
			e.mu.Unlock()
			return e.wait(ctx, c, r, mode, p)
		}
	}
	if e.runCardsFullLocked(subj) {
		e.mu.Unlock()
		e.log.Warn("refused without a card: the run has as many cards up as it may", "run", subj.ID, "key", r.Key.Fingerprint)
		return deny(mode, audit.ReasonCardLimit), false
	}
	e.mu.Unlock()

	shows, consoles := e.reachable(&r.Requester.Process, &subj.Process)
	if e.require && len(shows) == 0 && consoles == 0 {
		e.mu.Lock()
		e.lastNoApprover = e.now()
		e.mu.Unlock()
		e.log.Warn(`refused: no approver can show the card (no "postern approve" attached, no desktop notification service, no askpass)`, "pid", r.Requester.PID, "key", r.Key.Fingerprint)
		d := deny(mode, audit.ReasonNoApprover)
		d.chain = chain
		return d, false
	}

	target := ""
	switch {
	case dest != nil:
		target = " for " + destText(dest)
	case unverified != "":
		target = " for an UNKNOWN destination"
	case r.Purpose == PurposeSSHSig:
		// The namespace is the requester's: the question shows it
		// quoted, and a sentence does not name it unquoted.
		target = " to sign in the namespace the question names"
	}
	reason, sentence := audit.ReasonPerCall, "This use needs approval every time: approve this one use of key "+r.Key.Display()+target+"."
	switch {
	case r.RetryOf != "" && r.Running != "":
		reason, sentence = audit.ReasonRetryUnknown, "The same command was sent before and its outcome is unknown: "+r.RetryOf+". The same command is also under way now: "+r.Running+". Approve only if you checked that running it again, alongside that one, is safe."
	case r.RetryOf != "":
		reason, sentence = audit.ReasonRetryUnknown, "The same command was sent before and its outcome is unknown: "+r.RetryOf+". Approve only if you checked that running it again is safe."
	case r.Running != "":
		reason, sentence = audit.ReasonIdenticalRunning, "The same command is still running: "+r.Running+". Approve only if running it a second time, at once, is safe."
	case unseen:
		sentence = "The run does not show its program (it is not dumpable), so a session could not end when it executes another: approve this one use of key " + r.Key.Display() + target + "."
	}
	covers := "this call only"
	if mode == audit.ModeSession {
		reason, sentence = e.reauth(subj, r.Key)
		covers = SessionCovers(p.Scope, r.Purpose, dest, p.Lifetime)
	}
	now := e.now()
	showCtx, hide := context.WithCancel(context.Background())
	c := &Card{
		hide:       hide,
		req:        r,
		epoch:      at.epoch,
		subjects:   subjects,
		joinKey:    joinKey,
		cooldownAs: coolKey,
		scope:      p.Scope,
		lifetime:   p.Lifetime,
		chain:      chain,
		done:       make(chan struct{}),
		expires:    now.Add(p.CardTimeout),
		cooldown:   p.Cooldown,
	}
	c.View = CardView{
		ID:          newCardID(),
		Reason:      reason,
		Changed:     sentence,
		Mode:        mode,
		Selected:    sel,
		Key:         r.Key.view(),
		Purpose:     r.Purpose,
		Destination: dest,
		Unverified:  unverified,
		Namespace:   r.Namespace,
		Forwarded:   r.Forwarded || (dest != nil && dest.Forwarding),
		Covers:      covers,
		PerCall:     perCall,
		Claim:       claimed(argv),
		Relay:       r.Relay,
		Command:     string(r.Command),
		Terminal:    r.Terminal,
		ProbeOf:     r.ProbeOf,
		Created:     now.UTC(),
		Expires:     c.expires.UTC(),
	}
	if r.Message != nil {
		c.View.Message = r.Message()
	}
	for i := range subjects {
		c.View.Subjects = append(c.View.Subjects, e.runView(subjects[i]))
	}
	c.View.Run = c.View.Subjects[sel]
	for i := range chain {
		c.View.Requester = append(c.View.Requester, e.processView(&chain[i]))
	}
	// postern why says what made a per-call card ask, as the card did,
	// from the moment the card can be seen.
	because := ""
	if mode == audit.ModePerCall {
		because = strings.Join(perCall, "; ")
	}
	why := e.whyEntryOf(r, Decision{Mode: mode, Card: c.View.ID, Run: subj.ID, because: because}, true, chain)
	e.mu.Lock()
	if e.epochChanges.Load() != at.changes {
		// The vault locked or unlocked since the request read its epoch,
		// and its cards were refused then: this one would carry the old
		// epoch, which no answer approves. Decided again, under the
		// vault's state now.
		e.mu.Unlock()
		hide()
		return Decision{}, true
	}
	// Another request may have put up the same question while this card
	// was made: wait on that one, so that one question has one card.
	if o := e.joinLocked(joinKey); o != nil {
		e.mu.Unlock()
		hide()
		return e.wait(ctx, o, r, mode, p)
	}
	if d := e.deniedBeforeLocked(coolKey); d.n > 0 {
		c.View.DeniedBefore, c.View.LastDenied = d.n, d.last.UTC()
	}
	e.addCardLocked(c)
	e.keepWhyLocked(why)
	e.mu.Unlock()
	ev := e.requestEvent(audit.EventCardShown, r, Decision{Mode: mode, Reason: reason})
	ev.Card, ev.Run, ev.Label = c.View.ID, subj.ID, subj.Label
	c.View.Message.record(ev.Detail)
	e.record(ev)
	e.log.Info("card shown", "card", c.View.ID, "reason", reason, "mode", mode, "key", r.Key.Fingerprint, "pid", r.Requester.PID)
	go e.showElsewhere(showCtx, c.View, shows, consoles > 0)
	defer e.watchSocketRun(r)()
	d, again = e.wait(ctx, c, r, mode, p)
	if d.because == "" {
		d.because = because
	}
	return d, again
}

// joinLocked returns the pending card that asks the question joinKey
// names, counting one more request waiting on it; nil if there is none
// (or joinKey is empty). e.mu held.
func (e *Engine) joinLocked(joinKey string) *Card {
	if joinKey == "" {
		return nil
	}
	for _, c := range e.cards {
		if c.joinKey == joinKey {
			c.joined++
			return c
		}
	}
	return nil
}

// wait waits for c's answer, its timeout or the caller's end, for request
// r: the card's own request, or one that joined it. An approval of the
// card answers its own request only; a joined one is told to decide
// again, as it is when the card's own request goes (leaveCard). The card
// stays up, for the approvers too, while its own request waits.
func (e *Engine) wait(ctx context.Context, c *Card, r *Request, mode audit.Mode, p *Policy) (Decision, bool) {
	d, again := e.waitAnswer(ctx, c, r, mode, p)
	e.mu.Lock()
	pending := e.cards[c.View.ID] == c
	e.mu.Unlock()
	if !pending {
		c.hide()
	}
	if again || (d.Allow && r != c.req) {
		return Decision{}, true
	}
	d.Card, d.CardReason = c.View.ID, c.View.Reason
	d.chain = c.chain
	if d.Run == "" {
		d.Run = c.View.Run.ID
	}
	return d, false
}

// waitAnswer returns the decision c's answer gives request r, or again
// when r joined the card and its own request went.
func (e *Engine) waitAnswer(ctx context.Context, c *Card, r *Request, mode audit.Mode, p *Policy) (Decision, bool) {
	timer := time.NewTimer(time.Until(c.expires))
	defer timer.Stop()
	select {
	case <-c.done:
	case <-timer.C:
		// The first of the requests waiting on the card to see it time
		// out answers it for them all.
		e.mu.Lock()
		if e.cards[c.View.ID] == c {
			e.timeOutLocked(c, e.now())
		}
		e.mu.Unlock()
		<-c.done
	case <-ctx.Done():
		e.leaveCard(c, r, p.Cooldown)
		return deny(mode, withdrawnWhy(ctx)), false
	}
	a := c.answer
	if a.reask && r != c.req {
		return Decision{}, true
	}
	switch a.Verdict {
	case VerdictOnce, VerdictSession:
	default:
		if a.withdrawn != "" {
			return deny(mode, a.withdrawn), false
		}
		return deny(mode, audit.ReasonDenied), false
	}
	// An answer given across a lock or unlock authorizes nothing.
	if locked, epoch := e.vault(); locked || epoch != c.epoch {
		return deny(mode, audit.ReasonVaultStateChanged), false
	}
	// Nor one for the socket of a run that ended while its card was up:
	// nothing tells of an exec on the run's process but this check.
	if why := e.socketRunEnded(r, true); why != "" {
		return deny(mode, why), false
	}
	if a.Verdict == VerdictSession && mode == audit.ModeSession {
		d := allow(mode, audit.ReasonApprovedSession)
		d.Grant, d.Run = a.grant, a.run
		return d, false
	}
	return allow(mode, audit.ReasonApprovedOnce), false
}

func subjectKey(r *Run) string {
	if r.ID != "" {
		return r.ID
	}
	return fmt.Sprintf("pid:%d:%d", r.Process.PID, r.Process.StartTicks)
}

// subjects returns who a session approval could bind: the run a run
// socket belongs to, or the requester and its live ancestors (init and
// other users' processes excluded), with the index to preselect: the
// first of the configured agents, else the first process approved before
// for the key, else the requester. argv is the requester's command line,
// read already. Preselecting grants nothing.
func (e *Engine) subjects(r *Request, chain procid.Chain, argv []string, p *Policy) ([]*Run, int, error) {
	if r.Channel.Kind == ChannelRun {
		e.mu.Lock()
		run := e.runs[r.Channel.Run]
		e.mu.Unlock()
		if run == nil || run.Ended() != "" || run.pin == nil {
			return nil, 0, fmt.Errorf("run %s has ended", r.Channel.Run)
		}
		// Admitted as the run's descendant, the requester may have left
		// the run since (its parent exited and it was given to init).
		in, err := r.Requester.Within(run.pin)
		if err != nil {
			return nil, 0, err
		}
		if !in {
			return nil, 0, fmt.Errorf("pid %d, on the socket of run %s: %w", r.Requester.PID, run.ID, ErrNotDescendant)
		}
		return []*Run{run}, 0, nil
	}
	var out []*Run
	sel := -1
	for i := range chain {
		pr := chain[i]
		if pr.PID <= 1 || pr.UID != r.Requester.UID {
			break
		}
		if pr.Exe.Hidden {
			continue // its program, and so an exec, does not show
		}
		out = append(out, &Run{Process: pr})
		cmdline := func() []string {
			if i == 0 {
				return argv
			}
			return e.procs.Argv(pr.PID)
		}
		if sel < 0 && p.isAgent(&pr, cmdline) {
			sel = len(out) - 1
		}
	}
	if len(out) == 0 {
		// The requester is init, or none of the chain shows its
		// program: shown, on a card that asks about this call only
		// (decide, ask).
		out = []*Run{{Process: r.Requester.Process}}
	}
	if sel < 0 {
		// A process approved before for this key (its grant ended with a
		// restart, a lock, or an exec on it) is the likely run.
		for i := range out {
			if e.approvedBefore(&out[i].Process, r.Key) {
				sel = i
				break
			}
		}
	}
	if sel < 0 {
		sel = 0
	}
	return out, sel, nil
}

// SessionCovers is what a session card's Covers line says a session
// approval covers, under scope, for a request of purpose to dest (nil:
// none verified), lasting at most lifetime (0: no bound). The key is the
// question's, named on the card's first line.
func SessionCovers(scope Scope, purpose Purpose, dest *DestView, lifetime time.Duration) string {
	covers := "this run and its descendants, for this key"
	if scope == ScopeDestination {
		switch {
		case dest != nil:
			covers += " to " + destText(dest) + " only"
		case purpose == PurposeSSHSig:
			covers += " for signatures in the namespace the question names only, and no login"
		default:
			covers += " for uses that log in to no host (such as signatures), to no host"
		}
	} else {
		// The key's every use, whatever this one is: a card for a
		// signature says that logins ride it too.
		covers += ", any use: logins to hosts no rule asks about every time, and signatures in any namespace"
	}
	covers += ", until the run exits, the vault locks or the gateway restarts"
	if lifetime > 0 {
		// The grant lasts no longer (answer.go: shorterLifetime).
		covers += ", and at most " + lifetime.String() + " after the approval"
	}
	return covers
}
