package approvals

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync/atomic"
	"time"

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

	pin     *procid.Peer
	ended   atomic.Pointer[string] // why the run ended; nil while it lives
	endedAt time.Time
	ready   chan struct{} // closed once the process is registered (launched runs)
}

// Ended returns why the run ended, or "".
func (r *Run) Ended() string {
	if p := r.ended.Load(); p != nil {
		return *p
	}
	return ""
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func newRunID() string { return "R" + randomHex(4) }

// check verifies the run's process against live evidence: alive, same
// start time, same executable. It returns the end reason when it fails.
func (r *Run) check() (reason string, ok bool) {
	if why := r.Ended(); why != "" {
		return why, false
	}
	if r.pin == nil {
		return "", false
	}
	if err := r.pin.Verify(); err != nil {
		if isChanged(err) {
			return ReasonIdentityMismatch, false
		}
		return ReasonProcessExited, false
	}
	return "", true
}

func isChanged(err error) bool { return errors.Is(err, procid.ErrChanged) }

// End reasons of a session approval.
const (
	ReasonProcessExited    = "process_exited"
	ReasonIdentityMismatch = "identity_mismatch"
	ReasonGatewayRestarted = "gateway_restarted"
	ReasonVaultLocked      = "vault_locked"
	ReasonVaultChanged     = "vault_changed"
	ReasonRevoked          = "revoked"
	ReasonExpired          = "expired"
	ReasonGatewayStopped   = "gateway_stopped"
)

// Card reasons, as the approver sees them.
const (
	CardNew               = "new"
	CardPerCall           = "per_call"
	CardProcessChanged    = "REAUTH_REQUIRED process_changed"
	CardGatewayRestarted  = "REAUTH_REQUIRED gateway_restarted"
	CardVaultStateChanged = "REAUTH_REQUIRED vault_state_changed"
	CardRetryUnknown      = "retry_of_unknown"
)
