package approvals

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/confine"
	"github.com/postern/postern/internal/procid"
)

// A Run is the process a session approval is about: launched by
// "postern run" (the gateway inspected it after exec and minted its launch
// nonce), or chosen by the approver among a requester's live ancestors.
// A run ends when its process exits or stops being the process that was
// inspected, and its grants end with it.
type Run struct {
	ID       string
	Label    string // display context only
	Nonce    string // minted by the gateway; never leaves it
	Process  procid.Process
	Argv     []string // what the process says it was started with: a claim
	Launched bool     // through "postern run"
	Socket   string   // the run's own agent socket, for launched runs
	Started  time.Time
	// PrevBoot is set when the run's process was registered by an
	// earlier gateway: display context for the card, never authority.
	PrevBoot string
	// Confinement is how "postern run" confined the run; NS are the
	// namespaces the gateway read from the run's process when it was
	// registered (zero for an unconfined run).
	Confinement confine.Level
	NS          procid.Namespaces

	pin      *procid.Peer
	preparer procid.Process               // "postern run": while the run is prepared and not started, and for the terminal session it launched it from
	ended    atomic.Pointer[audit.Reason] // why the run ended; nil while it lives
	endedAt  time.Time
	ready    chan struct{} // closed once the process is registered (launched runs)
}

// launcherSession returns the terminal session of the "postern run" that
// launched the run, or 0: a confined run has a terminal of its own, in a
// session of its own, and its output still reaches the terminal postern
// run was started from, whose session is the run's too.
func (r *Run) launcherSession() int {
	if !r.Launched {
		return 0
	}
	return r.preparer.Session
}

// Ended returns why the run ended (an end reason), or "".
func (r *Run) Ended() audit.Reason {
	if p := r.ended.Load(); p != nil {
		return *p
	}
	return ""
}

// runEnded is the error of a run that has ended, why.
func runEnded(id string, why audit.Reason) error {
	return fmt.Errorf("run %s has ended (%s)", id, why)
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func newRunID() string { return "R" + randomHex(4) }

// check verifies the run's process against live evidence: alive, same
// start time, same program (procid.Peer.Verify). It returns the end
// reason when it fails, or ReasonOutOfResources when the gateway was
// short of descriptors or memory for the check, which ends nothing
// (endFailed).
func (r *Run) check() (reason audit.Reason, ok bool) {
	if why := r.Ended(); why != "" {
		return why, false
	}
	if r.pin == nil {
		return "", false
	}
	if err := r.pin.Verify(); err != nil {
		// An exec on the run's pid — another executable, or the same one
		// with a new address space — is a new process.
		switch {
		case errors.Is(err, procid.ErrNoResources):
			return audit.ReasonOutOfResources, false
		case errors.Is(err, procid.ErrChanged):
			return audit.ReasonProcessChanged, false
		}
		return audit.ReasonProcessExited, false
	}
	return "", true
}

// endFailed ends the run id whose check failed with reason, unless the
// check could not be made (ReasonOutOfResources): a run does not end for
// the gateway's want of descriptors.
func (e *Engine) endFailed(id string, reason audit.Reason) {
	if reason != audit.ReasonOutOfResources {
		e.EndRun(id, reason)
	}
}

// runFailed is the error of a run whose check failed with reason: it
// ended, or it could not be checked.
func runFailed(id string, reason audit.Reason) error {
	if reason == audit.ReasonOutOfResources {
		return fmt.Errorf("run %s could not be checked: %w", id, procid.ErrNoResources)
	}
	return runEnded(id, reason)
}
