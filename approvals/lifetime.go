package approvals

import (
	"errors"
	"fmt"

	"github.com/postern/postern/audit"
)

// addRun records a live run and ends it when its process exits.
func (e *Engine) addRun(run *Run) {
	e.mu.Lock()
	e.runs[run.ID] = run
	e.mu.Unlock()
	e.endOnExit(run)
}

// endOnExit ends run when its pinned process exits.
func (e *Engine) endOnExit(run *Run) {
	if ch := run.pin.Exited(); ch != nil {
		go func() {
			<-ch
			e.EndRun(run.ID, audit.ReasonProcessExited)
		}()
	}
}

// socketRunEnded returns why the run whose socket r came through has
// ended, or "" while it lives or r came another way. live checks the run
// against live evidence too (ending it when that fails), rather than only
// whether it was found ended.
func (e *Engine) socketRunEnded(r *Request, live bool) audit.Reason {
	if r.Channel.Kind != ChannelRun {
		return ""
	}
	e.mu.Lock()
	run := e.runs[r.Channel.Run]
	e.mu.Unlock()
	if run == nil {
		return audit.ReasonProcessExited // ended, and forgotten
	}
	if !live || run.pin == nil {
		return run.Ended()
	}
	if reason, ok := run.check(); !ok {
		e.endFailed(run.ID, reason)
		return reason
	}
	return ""
}

// watchSocketRun watches, while a card for r waits, the run whose socket
// r came through, and ends it when its process exits or executes another
// program: an exec, which nothing reports, is found within
// procid.RecheckEvery, and the run's cards are withdrawn with it (EndRun).
// It returns the function that ends the watch; for a request that came
// another way, one that does nothing.
func (e *Engine) watchSocketRun(r *Request) (stop func()) {
	if r.Channel.Kind != ChannelRun {
		return func() {}
	}
	e.mu.Lock()
	run := e.runs[r.Channel.Run]
	e.mu.Unlock()
	if run == nil || run.pin == nil {
		return func() {}
	}
	return run.pin.WatchGone(func(error) {
		if reason, ok := run.check(); !ok {
			e.endFailed(run.ID, reason)
		}
	})
}

// EndRun ends a run and its grants.
func (e *Engine) EndRun(id string, reason audit.Reason) {
	e.mu.Lock()
	run := e.runs[id]
	if run == nil || run.Ended() != "" {
		e.mu.Unlock()
		return
	}
	run.ended.Store(&reason)
	run.endedAt = e.now()
	delete(e.runs, id)
	e.forgetSocketLocked(run.Socket)
	ended := 0
	for gid, g := range e.grants {
		if g.Run == run {
			e.endGrantLocked(gid, g, reason)
			ended++
		}
	}
	// A run never started was never registered (run_registered) and
	// covered nothing: its end is not recorded either, but for a start
	// refused because the process was not the one launched, evidence
	// of a process passed off as the run.
	silent := run.pin == nil && reason != audit.ReasonIdentityMismatch
	if ended == 0 && !silent {
		e.past = append(e.past, pastOf(e.bootID, run, nil, reason, run.endedAt))
	}
	// A request through the run's socket is refused once the run has
	// ended (subjects): one that waits for a person is refused with it,
	// not signed on an answer given after the end.
	for _, c := range e.cards {
		if c.req != nil && c.req.Channel.Kind == ChannelRun && c.req.Channel.Run == id {
			e.closeCardLocked(c, Answer{Verdict: VerdictDeny, withdrawn: reason})
		}
	}
	e.savePastLocked()
	e.mu.Unlock()
	if ended == 0 && !silent {
		// A run no approval covered: its end is recorded on its own, as
		// its registration was.
		e.record(audit.Event{Type: audit.EventSessionEnded, Run: id, Reason: reason, Label: run.Label})
	}
	e.log.Info("run ended", "run", id, "reason", reason, "grants", ended)
	if run.pin != nil {
		run.pin.Close()
	}
	if e.onRunEnd != nil {
		e.onRunEnd(run)
	}
}

func (e *Engine) endGrant(g *Grant, reason audit.Reason) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.grants[g.ID] == g {
		e.endGrantLocked(g.ID, g, reason)
		e.savePastLocked()
	}
}

func (e *Engine) endGrantLocked(id string, g *Grant, reason audit.Reason) {
	e.removeGrantLocked(id)
	g.ended = reason
	e.recordAt(audit.Event{Type: audit.EventSessionEnded, Run: g.Run.ID, Grant: id, Key: g.Key.Fingerprint, Reason: reason, Label: g.Run.Label}, g.Epoch)
	e.past = append(e.past, pastOf(e.bootID, g.Run, g, reason, e.now()))
	e.past = trimPast(e.past)
	e.log.Info("session ended", "grant", id, "run", g.Run.ID, "reason", reason)
}

func (e *Engine) savePastLocked() {
	if e.pastSaved {
		return
	}
	if err := savePast(e.contextFile, e.past); err != nil {
		e.log.Warn("cannot save display context", "err", err)
	}
}

// EpochChanged ends every grant and refuses every pending card: nothing
// decided in an earlier vault epoch authorizes anything. Grants end as
// vault_locked when the change left the vault locked, else as
// vault_state_changed.
func (e *Engine) EpochChanged(locked bool) {
	reason := audit.ReasonVaultStateChanged
	if locked {
		reason = audit.ReasonVaultLocked
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.epochChanges.Add(1)
	for id, g := range e.grants {
		e.endGrantLocked(id, g, reason)
	}
	e.withdrawRequestsLocked(reason)
	e.savePastLocked()
}

// ErrNoGrant: Revoke named neither a live grant nor a run.
var ErrNoGrant = errors.New("no grant or run")

// Revoke ends grants now: grant target, or every grant of run target. It
// returns how many grants ended.
func (e *Engine) Revoke(target string) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := e.revokeLocked(func(id string, g *Grant) bool { return id == target || g.Run.ID == target })
	if n == 0 {
		if _, ok := e.runs[target]; !ok {
			return 0, fmt.Errorf("%w %q", ErrNoGrant, target)
		}
	}
	return n, nil
}

// RevokeAll ends every grant now and returns how many ended.
func (e *Engine) RevokeAll() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.revokeLocked(func(string, *Grant) bool { return true })
}

// WithdrawRequests refuses every pending card of a request, as revoked:
// for SIGUSR1, after which no key the cards ask about is held, and no
// answer given later to a card asked before it should grant anything.
func (e *Engine) WithdrawRequests() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.withdrawRequestsLocked(audit.ReasonRevoked)
}

// withdrawRequestsLocked refuses every pending card of a request, why; a
// policy change is no request, and its card waits on. e.mu held.
func (e *Engine) withdrawRequestsLocked(why audit.Reason) {
	for _, c := range e.cards {
		if c.policy == nil {
			e.closeCardLocked(c, Answer{Verdict: VerdictDeny, withdrawn: why})
		}
	}
}

func (e *Engine) revokeLocked(match func(id string, g *Grant) bool) int {
	n := 0
	for id, g := range e.grants {
		if match(id, g) {
			e.endGrantLocked(id, g, audit.ReasonRevoked)
			n++
		}
	}
	e.savePastLocked()
	return n
}
