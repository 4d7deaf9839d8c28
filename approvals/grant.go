package approvals

import (
	"time"

	"github.com/postern/postern/audit"
)

// A Grant is a session approval: one identified run may use one key (for
// one destination, when the policy scopes sessions to destinations)
// during its lifetime. It is bound to the run's identity and launch
// nonce, the gateway's boot id and the vault epoch, lives in memory only,
// and covers the run's live descendants, checked on every request.
type Grant struct {
	ID     string
	Run    *Run
	Nonce  string // the run's launch nonce when approved
	BootID string
	Epoch  uint64
	Key    Key
	// Scoped grants cover only the destination they were approved for:
	// Dest, the verified host key's fingerprint, or no destination at
	// all (Dest empty: requests that authenticate to nothing, such as
	// SSHSIG signatures).
	Scoped    bool
	Dest      string
	DestNames []string
	Approver  string
	Created   time.Time
	Expires   time.Time // zero: ends only with the run
	ended     audit.Reason
}

func newGrantID() string { return "G" + randomHex(4) }

// destKey is what a destination-scoped grant is compared on: the verified
// host key's fingerprint, or "" for a request that authenticates to no
// destination. An authentication whose destination was not verified has
// none to compare: ok is false, and no scoped grant covers it.
func destKey(r *Request, dest *DestView) (key string, ok bool) {
	switch {
	case dest != nil:
		return dest.Fingerprint, true
	case r.Purpose == PurposeAuth:
		return "", false
	}
	return "", true
}

// coversDest reports whether g covers a request with the given
// destination. A grant is scoped when it was approved under
// session_scope = "destination", or when that is the policy now (a
// tightening applies at once).
func (g *Grant) coversDest(r *Request, dest *DestView, scope Scope) bool {
	if !g.Scoped && scope != ScopeDestination {
		return true
	}
	k, ok := destKey(r, dest)
	return ok && k == g.Dest
}
