package approvals

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/procid"
)

// A Verdict is what an approver decided on a card.
type Verdict int

const (
	// VerdictDeny refuses the request. Anyone may give it.
	VerdictDeny Verdict = iota + 1
	// VerdictOnce approves this one request.
	VerdictOnce
	// VerdictSession approves the chosen subject as a run, for the key,
	// until it exits. On a per-call card it approves this one request.
	VerdictSession
)

var verdictNames = map[Verdict]string{VerdictDeny: "deny", VerdictOnce: "once", VerdictSession: "session"}

// String returns the verdict's name on the control socket: "deny",
// "once" or "session".
func (v Verdict) String() string {
	if s, ok := verdictNames[v]; ok {
		return s
	}
	return "verdict(" + strconv.Itoa(int(v)) + ")"
}

// ParseVerdict reads a verdict's name.
func ParseVerdict(s string) (Verdict, error) {
	for v, name := range verdictNames {
		if s == name {
			return v, nil
		}
	}
	return 0, fmt.Errorf("decision %q: want once, session or deny", s)
}

// Answer is an approver's decision on a card. The zero Verdict denies.
type Answer struct {
	Verdict  Verdict
	Subject  int    // index into the card's subjects, for VerdictSession; negative: the preselected one
	Approver string // who answered: the approver process, or "askpass"

	grant, run string // set by Answer for a session
	// withdrawn is why the gateway refused the card itself, with no
	// approver's answer.
	withdrawn audit.Reason
	// reask: the card was withdrawn because its own request went; the
	// requests that joined it ask again, each to be shown.
	reask bool
}

// Errors of Answer.
var (
	ErrNoCard      = errors.New("no such card (answered, expired, or from before a gateway restart)")
	ErrSelfApprove = errors.New("refused: an approval cannot come from the requesting process, the run, or a descendant of either")
	ErrSameSession = errors.New("refused: an approval cannot come from the terminal session of the requesting process or the run; approve from another terminal")
	// ErrApproverUndecided refuses an approval when the gateway could not
	// establish that it comes from outside the requesting process tree.
	ErrApproverUndecided = errors.New("refused: the gateway could not establish that the approval comes from outside the requesting process tree; try again")
	// ErrNotOffered refuses an answer its card does not offer.
	ErrNotOffered = errors.New("refused: the card does not offer that answer")
)

// notOffered refuses an approval of card c that asks for what the card
// does not offer, rather than apply another answer than the person
// gave: a session of a policy change card, which is approved once, and
// a subject to bind on a card that offers no session.
func notOffered(c *Card, a Answer) error {
	switch {
	case a.Verdict != VerdictOnce && a.Verdict != VerdictSession:
	case c.policy != nil && a.Verdict == VerdictSession:
		return fmt.Errorf("%w: card %s asks to change the configuration, which is approved once or denied, never for a session", ErrNotOffered, c.View.ID)
	case a.Subject >= 0 && !c.View.OffersSession():
		return fmt.Errorf("%w: card %s offers no session, so no subject to bind; it is approved once or denied", ErrNotOffered, c.View.ID)
	}
	return nil
}

// Answer decides card id, as AnswerCard does.
func (e *Engine) Answer(id string, a Answer, approver *procid.Peer) error {
	_, err := e.AnswerCard(id, a, approver)
	return err
}

// AnswerCard decides card id and returns the verdict it applied: a
// session answer to a per-call card approves the one call, as a once
// answer does, and is applied as once; an answer the card does not offer
// is refused (notOffered). approver is the verified process that sent the answer (nil for the
// gateway's own askpass dialog); it must not be the requester, the
// subject the card proposes, the subject the answer binds, or a
// descendant of one. A session answer registers the chosen subject
// (a.Subject, or the preselected one when negative) as a run, pinning
// it, and grants it the key.
func (e *Engine) AnswerCard(id string, a Answer, approver *procid.Peer) (Verdict, error) {
	e.mu.Lock()
	e.expireCardsLocked(e.now())
	c := e.cards[id]
	e.mu.Unlock()
	if c == nil {
		return 0, ErrNoCard
	}
	if err := notOffered(c, a); err != nil {
		return 0, err
	}
	if a.Verdict == VerdictSession && !c.View.OffersSession() {
		a.Verdict = VerdictOnce
	}
	if c.policy != nil {
		return a.Verdict, e.answerPolicy(c, a, approver)
	}
	if a.Subject < 0 {
		a.Subject = c.View.Selected
	}
	approves := a.Verdict == VerdictOnce || a.Verdict == VerdictSession
	if a.Verdict == VerdictSession && (a.Subject < 0 || a.Subject >= len(c.subjects)) {
		return 0, fmt.Errorf("no subject %d on card %s (it has %d)", a.Subject, id, len(c.subjects))
	}
	// The subject an answer binds: the one the card proposes, unless a
	// session answer chose another.
	proposed := c.subjects[c.View.Selected]
	subj := proposed
	if a.Verdict == VerdictSession {
		subj = c.subjects[a.Subject]
	}
	// A denial only lowers authority: anyone may give it. An approval
	// comes from outside the requester, the run the card proposes and the
	// subject it binds: binding one below the proposed run does not free
	// that run's tree to answer.
	if approver != nil && approves {
		runs, sessions := e.runsOf(c.chain)
		within := append([]*procid.Process{&c.req.Requester.Process, &proposed.Process}, runs...)
		sessions = append(sessions, proposed.launcherSession())
		if subj != proposed {
			within = append(within, &subj.Process)
			sessions = append(sessions, subj.launcherSession())
		}
		if err := e.outside(e.log, approver, "card "+id, within, sessions); err != nil {
			return 0, err
		}
	}
	var g *Grant
	var fresh *Run // pinned for this answer, kept only with its grant
	if a.Verdict == VerdictSession {
		run, isNew, err := e.register(subj)
		if err != nil {
			return 0, err
		}
		if isNew {
			fresh = run
		}
		p := e.Policy()
		g = &Grant{
			ID: newGrantID(), Run: run, Nonce: run.Nonce, BootID: e.bootID, Epoch: c.epoch,
			Key: c.req.Key, Approver: a.Approver, Created: e.now(),
		}
		if d := c.View.Destination; d != nil {
			g.asked.dest, g.asked.names = d.Fingerprint, d.Names
		} else if c.req.Purpose == PurposeSSHSig {
			g.asked.namespace = c.req.Namespace
		}
		// As narrow as the card said, or as the policy is now if that
		// is narrower.
		g.Scoped = c.scope == ScopeDestination || p.Scope == ScopeDestination
		if life := shorterLifetime(c.lifetime, p.Lifetime); life > 0 {
			g.Expires = g.Created.Add(life)
		}
	}
	// Read before taking e.mu: the vault calls EpochChanged with its own
	// lock held. A grant stored from a stale epoch never covers anything
	// (covering checks the epoch again).
	_, epoch := e.vault()
	if fresh != nil {
		// Not kept yet, so nothing ends it when its process exits: it is
		// checked here, and watched once kept.
		if reason, ok := fresh.check(); !ok {
			fresh.pin.Close()
			if reason == audit.ReasonOutOfResources {
				return 0, fmt.Errorf("cannot check the chosen process (pid %d): %w", fresh.Process.PID, procid.ErrNoResources)
			}
			return 0, fmt.Errorf("the chosen process (pid %d) ended before the approval was applied (%s)", fresh.Process.PID, reason)
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.expireCardsLocked(e.now())
	kept := false
	if fresh != nil {
		// Run last, under e.mu: a process chosen for a grant that was
		// not given is no run.
		defer func() {
			if !kept {
				fresh.pin.Close()
			}
		}()
	}
	if e.cards[id] != c {
		return 0, ErrNoCard
	}
	if g != nil {
		// The run may have ended since register found it alive: EndRun,
		// which ends its grants under e.mu, has then run already, and a
		// grant stored now would outlive it.
		if why := g.Run.Ended(); why != "" {
			return 0, runEnded(g.Run.ID, why)
		}
		if epoch != c.epoch {
			g = nil // answered across a lock or unlock: no grant
		} else {
			if fresh != nil {
				g.Run = e.keepLocked(fresh, g.Epoch)
				g.Nonce, kept = g.Run.Nonce, g.Run == fresh
			}
			e.addGrantLocked(g)
		}
	}
	attrs := []any{"card", id, "decision", a.Verdict.String(), "approver", a.Approver}
	if g != nil {
		attrs = append(attrs, "grant", g.ID, "run", g.Run.ID)
		// Recorded before the waiting request can use the grant; the epoch
		// is given, so recording does not ask the vault (whose lock must
		// not be taken under e.mu).
		ev := audit.Event{
			Type: audit.EventSessionApproved, Run: g.Run.ID, Grant: g.ID, Card: id, Key: g.Key.Fingerprint,
			Dest: g.scope().dest, DestNames: g.scope().names, Mode: audit.ModeSession, Approver: a.Approver,
			Label: g.Run.Label, Process: auditProcess(e.procs, &g.Run.Process),
			Detail: map[string]string{"nonce_bound": "true", "launched": strconv.FormatBool(g.Run.Launched)},
		}
		if ns := g.scope().namespace; ns != "" {
			ev.Detail["namespace"] = ns
		}
		a.grant, a.run = g.ID, g.Run.ID
		if err := e.recordAt(ev, g.Epoch); err != nil {
			e.removeGrantLocked(g.ID)
			if kept {
				delete(e.runs, fresh.ID)
				kept = false
			}
			a.Verdict = VerdictDeny
			e.closeCardLocked(c, a)
			return 0, fmt.Errorf("%w; the approval was not applied", ErrNotRecorded)
		}
	}
	e.closeCardLocked(c, a)
	e.answeredLocked(c, approves)
	if kept {
		e.endOnExit(fresh)
	}
	e.log.Info("card answered", attrs...)
	return a.Verdict, nil
}

// shorterLifetime returns the shorter of two session lifetimes, where 0
// is unlimited.
func shorterLifetime(a, b time.Duration) time.Duration {
	if a == 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

// closeCardLocked gives card c its answer and wakes who waits on it; e.mu
// held.
func (e *Engine) closeCardLocked(c *Card, a Answer) {
	e.dropCardLocked(c)
	c.answer = a
	close(c.done)
}

// register makes a chosen subject a run: the run it is already (isNew
// false), or a new one, pinned, with a launch nonce, that is not kept yet
// (keepLocked): a run only once its grant is given.
func (e *Engine) register(subj *Run) (run *Run, isNew bool, err error) {
	if subj.ID != "" {
		if reason, ok := subj.check(); !ok {
			return nil, false, runFailed(subj.ID, reason)
		}
		return subj, false, nil
	}
	if run := e.liveRunOf(&subj.Process); run != nil {
		// The process is a run already (launched, or approved before
		// for another key): its grants are that run's, ended and
		// revoked with it. A run whose process executed another program
		// since ends here, and the program the card showed, if it is
		// that one, is pinned anew below.
		reason, ok := run.check()
		switch {
		case reason == audit.ReasonOutOfResources:
			return nil, false, runFailed(run.ID, reason)
		case !ok:
			e.EndRun(run.ID, reason)
		case !run.Process.Exe.Same(subj.Process.Exe) || run.Process.Layout != subj.Process.Layout:
			return nil, false, fmt.Errorf("pid %d is no longer the process shown on the card", subj.Process.PID)
		default:
			return run, false, nil
		}
	}
	pin, err := e.procs.Pin(subj.Process.PID)
	if err != nil {
		if errors.Is(err, procid.ErrNoResources) {
			return nil, false, fmt.Errorf("cannot pin the chosen process: %w", err)
		}
		return nil, false, fmt.Errorf("the chosen process is gone: %w", err)
	}
	// The same start time and executable, and the same address space
	// layout: an exec of the same executable since the card was shown
	// (an interpreter given another script) is another program.
	if pin.StartTicks != subj.Process.StartTicks || !pin.Exe.Same(subj.Process.Exe) || pin.Layout != subj.Process.Layout {
		pin.Close()
		return nil, false, fmt.Errorf("pid %d is no longer the process shown on the card", subj.Process.PID)
	}
	run = &Run{
		ID: newRunID(), Nonce: randomHex(16), Process: pin.Process, Argv: e.procs.Argv(pin.PID),
		Started: e.now(), pin: pin,
	}
	return run, true, nil
}

// keepLocked keeps run, new from register, as the run of its process, and
// records it registered in vault epoch epoch; the caller watches its exit
// (endOnExit) once e.mu is let go. When another answer made the process a
// run meanwhile, that run is the one returned, and run is not kept. e.mu
// held.
func (e *Engine) keepLocked(run *Run, epoch uint64) *Run {
	if other := e.liveRunOfLocked(&run.Process); other != nil {
		return other
	}
	e.runs[run.ID] = run
	e.recordAt(runRegistered(e.procs, run), epoch)
	return run
}

// liveRunOf returns the run registered for process p (the same pid and
// start time) that has not ended, or nil.
func (e *Engine) liveRunOf(p *procid.Process) *Run {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.liveRunOfLocked(p)
}

// liveRunOfLocked is liveRunOf; e.mu held.
func (e *Engine) liveRunOfLocked(p *procid.Process) *Run {
	for _, r := range e.runs {
		if r.pin != nil && r.Ended() == "" && r.Process.PID == p.PID && r.Process.StartTicks == p.StartTicks {
			return r
		}
	}
	return nil
}
