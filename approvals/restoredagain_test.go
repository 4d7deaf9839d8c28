package approvals

import (
	"strings"
	"testing"

	"github.com/postern/postern/audit"
)

// A run served again after a gateway restart is told so on the first card
// that asks it again; once approved again, a later card for it says what
// ended that approval (a vault lock), or that nothing changed of the
// process (a revoke), not that the gateway restarted.
func TestRestoredRunApprovedAgainIsNoLongerFromTheEarlierGateway(t *testing.T) {
	w := newWorld(t)
	_, e2, restored := w.restartApproved()
	if len(restored) != 1 {
		t.Fatalf("restored %d runs", len(restored))
	}
	w.e = e2
	ch, c := w.askedAfterRestart(restored[0])
	w.answer(c.ID, VerdictSession, 30)
	if d := got(t, ch); !d.Allow {
		t.Fatalf("re-approved: %+v", d)
	}
	// The vault locks and unlocks: the grant ends, and the next card
	// says so.
	w.setVault(true, 8)
	w.e.EpochChanged(true)
	w.setVault(false, 9)
	w.e.EpochChanged(false)
	ch = w.decide(w.runReq(restored[0], 13))
	c = w.card()
	w.answer(c.ID, VerdictDeny, 30)
	got(t, ch)
	if c.Reason != audit.ReasonReauthVaultStateChanged || strings.Contains(c.Changed, "restarted") {
		t.Fatalf("after a vault lock ended the approval given in this gateway, the card says %s: %q", c.Reason, c.Changed)
	}

	// Approved again, then revoked: a new question, as for any run.
	ch = w.decide(w.runReq(restored[0], 13))
	w.answer(w.card().ID, VerdictSession, 30)
	if d := got(t, ch); !d.Allow {
		t.Fatalf("re-approved: %+v", d)
	}
	if n, err := w.e.Revoke(restored[0].ID); n != 1 || err != nil {
		t.Fatalf("revoke: %d, %v", n, err)
	}
	ch = w.decide(w.runReq(restored[0], 13))
	c = w.card()
	w.answer(c.ID, VerdictDeny, 30)
	got(t, ch)
	if c.Reason != audit.ReasonCardNew || c.Changed != "" {
		t.Fatalf("after a revoke of the approval given in this gateway, the card says %s: %q", c.Reason, c.Changed)
	}
}

// restartApproved launches a run as pid 10, approves it for a session,
// stops the gateway and starts another (boot id boot-2) on the same
// display context: it returns the run, the new engine and the runs it
// restored.
func (w *world) restartApproved() (run *Run, e2 *Engine, restored []*Run) {
	w.t.Helper()
	run = w.launch("agent", 10)
	ch := w.decide(w.runReq(run, 13))
	w.answer(w.card().ID, VerdictSession, 30)
	got(w.t, ch)
	w.e.Stop()
	// A new gateway: new boot id, same display context file.
	cfg2 := w.cfg
	cfg2.BootID = "boot-2"
	e2 = NewEngine(cfg2)
	return run, e2, e2.Restore()
}

// askedAfterRestart makes a request through the socket of run, restored
// by w.e, and returns its decision to come and its card, which says the
// gateway restarted.
func (w *world) askedAfterRestart(run *Run) (<-chan Decision, CardView) {
	w.t.Helper()
	ch := w.decide(w.runReq(run, 13))
	c := w.card()
	if c.Reason != audit.ReasonReauthGatewayRestarted {
		w.t.Fatalf("the first card after the restart: %s", c.Reason)
	}
	return ch, c
}
