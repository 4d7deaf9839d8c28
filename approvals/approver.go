package approvals

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/postern/postern/internal/procid"
)

// outside checks that approver, a verified process that answers for a
// person, is outside each of within: not one of them or a descendant of
// one (walked as deep as the tree goes; a walk that cannot decide
// refuses), and not in the terminal session of one (a process that left
// the tree by a double fork keeps its session unless it also called
// setsid), and in none of the namespaces of any live confined run (a
// confined run must never answer anything; this catches a process that
// also called setsid), nor in one of sessions (the terminal session a
// launched run was started from). what names the act in log.
func (e *Engine) outside(log *slog.Logger, approver *procid.Peer, what string, within []*procid.Process, sessions []int) error {
	for _, p := range within {
		in, err := e.procs.DescendsFrom(approver.PID, approver.StartTicks, p)
		switch {
		case errors.Is(err, procid.ErrNoResources):
			// Not an approver that could not be placed: a gateway that
			// could not look (refused all the same).
			log.Warn("approval refused: the approver's ancestry could not be read", "what", what, "approver_pid", approver.PID, "err", err)
			return fmt.Errorf("cannot check that the approval comes from outside the requesting process tree: %w", err)
		case err != nil:
			log.Warn("approval refused: the approver's ancestry could not be established", "what", what, "approver_pid", approver.PID, "err", err)
			return fmt.Errorf("%w (%v)", ErrApproverUndecided, err)
		case in:
			log.Warn("approval refused: it came from inside the requesting process tree", "what", what, "approver_pid", approver.PID)
			return ErrSelfApprove
		case p.Session > 0 && approver.Session == p.Session:
			log.Warn("approval refused: it came from the requester's terminal session", "what", what, "approver_pid", approver.PID, "session", p.Session)
			return ErrSameSession
		}
	}
	if err := e.outsideConfined(approver); err != nil {
		log.Warn("approval refused", "what", what, "approver_pid", approver.PID, "err", err)
		return err
	}
	if approver.Session > 0 && slices.Contains(sessions, approver.Session) {
		log.Warn("approval refused: it came from the terminal session the run was started from", "what", what, "approver_pid", approver.PID, "session", approver.Session)
		return ErrSameSession
	}
	return nil
}

// OutsideRuns checks that approver is outside every live run (see
// outside): what an approver alone may do, such as changing the host
// inventory or resolving a journal entry by hand, is refused from inside a
// run. what names the act in the log.
func (e *Engine) OutsideRuns(approver *procid.Peer, what string) error {
	return e.outsideRuns(e.log, approver, what)
}

// StandsOutsideRuns says whether approver stands outside every live run,
// as OutsideRuns checks, and logs nothing: for what treats the person
// apart without refusing anyone else (the pacing of wrong passphrases).
func (e *Engine) StandsOutsideRuns(approver *procid.Peer) bool {
	return e.outsideRuns(slog.New(slog.DiscardHandler), approver, "") == nil
}

func (e *Engine) outsideRuns(log *slog.Logger, approver *procid.Peer, what string) error {
	e.mu.Lock()
	var within []*procid.Process
	var sessions []int
	for _, run := range e.runs {
		switch {
		case run.Ended() != "":
		case run.pin != nil:
			p := run.Process
			within = append(within, &p)
			sessions = append(sessions, run.launcherSession())
		case run.preparer.PID > 0:
			// Prepared, not started: the command may run already.
			p := run.preparer
			within = append(within, &p)
		}
	}
	e.mu.Unlock()
	return e.outside(log, approver, what, within, sessions)
}

// runsOf returns the processes and the launcher sessions
// (Run.launcherSession) of the live runs whose process is in chain: a
// request came through each of them, whatever run its card proposes (a
// run started inside another, a request that came another way than the
// run's socket), and an answer from any of their trees or sessions is
// refused.
func (e *Engine) runsOf(chain procid.Chain) (procs []*procid.Process, sessions []int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, run := range e.runs {
		if run.pin == nil || run.Ended() != "" {
			continue
		}
		for i := range chain {
			if chain[i].PID == run.Process.PID && chain[i].StartTicks == run.Process.StartTicks {
				p := run.Process
				procs = append(procs, &p)
				if s := run.launcherSession(); s != 0 {
					sessions = append(sessions, s)
				}
				break
			}
		}
	}
	return procs, sessions
}

// Errors of the approver checks.
var (
	ErrInsideRun  = errors.New("refused: an answer cannot come from inside a confined run (its user, pid or mount namespace, or one nested in them)")
	ErrUnverified = errors.New("refused: the answering process's namespaces cannot be verified; answer from a terminal in the gateway's own namespaces")
)

// outsideConfined checks that approver lives in none of the namespaces of
// any live confined run.
func (e *Engine) outsideConfined(approver *procid.Peer) error {
	e.mu.Lock()
	var confined []*Run
	for _, r := range e.runs {
		if r.NS.Known() && r.Ended() == "" {
			confined = append(confined, r)
		}
	}
	e.mu.Unlock()
	for _, r := range confined {
		in, err := approver.InNamespaces(r.NS)
		switch {
		case errors.Is(err, procid.ErrUnreadable):
			// The approver is not dumpable (postern approve makes itself
			// so) and the gateway cannot read its namespaces. The gateway's
			// user owns every run's user namespace (StartRun checked), and
			// may read every process started inside one, dumpable or not:
			// so this one was not started inside a run. Its pid namespace
			// must still be the gateway's own, read from its status.
			if err := e.samePIDNamespace(approver); err != nil {
				return err
			}
		case err != nil:
			return fmt.Errorf("%w: %v", ErrUnverified, err)
		case in:
			return fmt.Errorf("%w (run %s)", ErrInsideRun, r.ID)
		}
	}
	return nil
}

// samePIDNamespace checks that the approver lives in the gateway's pid
// namespace: as deep below this /proc as the gateway itself.
func (e *Engine) samePIDNamespace(approver *procid.Peer) error {
	own, err := e.procs.PIDNamespaceDepth(e.selfPID)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnverified, err)
	}
	d, err := e.procs.PIDNamespaceDepth(approver.PID)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnverified, err)
	}
	if err := approver.Verify(); err != nil {
		return err
	}
	if d != own {
		return ErrUnverified
	}
	return nil
}
