package approvals

import (
	"fmt"

	"github.com/postern/postern/internal/procid"
)

// outside checks that approver, a verified process that answers for a
// person, is outside each of within: not one of them or a descendant of
// one (walked as deep as the tree goes; a walk that cannot decide
// refuses), and not in the terminal session of one (a process that left
// the tree by a double fork keeps its session unless it also called
// setsid). what names the act in the log.
func (e *Engine) outside(approver *procid.Peer, what string, within ...*procid.Process) error {
	for _, p := range within {
		in, err := e.procs.DescendsFrom(approver.PID, approver.StartTicks, p)
		switch {
		case err != nil:
			e.log.Warn("approval refused: the approver's ancestry could not be established", "what", what, "approver_pid", approver.PID, "err", err)
			return fmt.Errorf("%w (%v)", ErrApproverUndecided, err)
		case in:
			e.log.Warn("approval refused: it came from inside the requesting process tree", "what", what, "approver_pid", approver.PID)
			return ErrSelfApprove
		case p.Session > 0 && approver.Session == p.Session:
			e.log.Warn("approval refused: it came from the requester's terminal session", "what", what, "approver_pid", approver.PID, "session", p.Session)
			return ErrSameSession
		}
	}
	return nil
}

// OutsideRuns checks that approver is outside every live run (see
// outside): what an approver alone may do, such as changing the host
// inventory, is refused from inside a run. what names the act in the log.
func (e *Engine) OutsideRuns(approver *procid.Peer, what string) error {
	e.mu.Lock()
	var within []*procid.Process
	for _, run := range e.runs {
		if run.pin != nil && run.Ended() == "" {
			p := run.Process
			within = append(within, &p)
		}
	}
	e.mu.Unlock()
	return e.outside(approver, what, within...)
}
