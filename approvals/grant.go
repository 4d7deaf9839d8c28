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
	ID        string
	Run       *Run
	Nonce     string // the run's launch nonce when approved
	BootID    string
	Epoch     uint64
	Key       Key
	Dest      string // host key fingerprint, for destination-scoped grants
	DestNames []string
	Approver  string
	Created   time.Time
	Expires   time.Time // zero: ends only with the run
	ended     audit.Reason
}

func newGrantID() string { return "G" + randomHex(4) }
