package approvals

import (
	"time"

	"github.com/postern/postern/audit"
)

// A run "postern run" prepared holds a socket until it starts. One that
// never starts (the caller died, or only ever prepared) ends after
// prepareTimeout, and its socket with it; the gateway refuses to prepare
// more than MaxPendingRuns at once.
var prepareTimeout = time.Minute

// MaxPendingRuns bounds the runs prepared and not yet started.
const MaxPendingRuns = 64

// expireIfPending ends run id if it has not started.
func (e *Engine) expireIfPending(id string) {
	e.mu.Lock()
	run := e.runs[id]
	pending := run != nil && run.pin == nil && run.Ended() == ""
	e.mu.Unlock()
	if pending {
		e.log.Warn("a prepared run never started; its socket is closed", "run", id, "after", prepareTimeout)
		e.EndRun(id, audit.ReasonExpired)
	}
}

// PendingRuns counts the runs prepared and not yet started.
func (e *Engine) PendingRuns() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, r := range e.runs {
		if r.Launched && r.pin == nil {
			n++
		}
	}
	return n
}
