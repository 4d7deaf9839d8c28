package approvals

import (
	"slices"
	"time"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/expiry"
)

// RunState is a live run as "postern sessions" lists it.
type RunState struct {
	RunView
	Socket  string    `json:"socket,omitempty"`
	Since   time.Time `json:"registered"`
	Pending bool      `json:"pending,omitempty"` // prepared, process not yet reported
	// Argv is the command line the run's process says it was started
	// with: a claim, cut past maxClaim bytes (claimed), as on a card.
	Argv     []string `json:"claimed_command,omitempty"`
	Restored string   `json:"previous_boot,omitempty"`
	Grants   int      `json:"grants"`
	// NoCardsUntil is when the run's cooldown ends, while it has one:
	// until then its requests are refused without a card.
	NoCardsUntil time.Time `json:"no_cards_until,omitzero"`
}

// GrantView is a live grant as "postern sessions" lists it.
type GrantView struct {
	ID        string   `json:"id"`
	Run       string   `json:"run"`
	Key       KeyView  `json:"key"`
	Dest      string   `json:"destination,omitempty"`
	DestNames []string `json:"destination_names,omitempty"`
	Namespace string   `json:"namespace,omitempty"` // a scoped grant for signatures
	// Scoped: the grant covers only what its card asked about (Dest,
	// or signatures in Namespace), under session_scope = "destination";
	// with neither (its card was for a login to no verified host), it
	// covers nothing.
	Scoped   bool      `json:"scoped,omitempty"`
	Approved time.Time `json:"approved"`
	Approver string    `json:"approver"`
	BootID   string    `json:"boot_id"`
	Epoch    uint64    `json:"vault_epoch"`
	Expires  time.Time `json:"expires,omitzero"`
}

// Sessions lists the live runs and grants. Runs whose exit the platform
// cannot watch are checked against live evidence first, so that none
// listed has ended.
func (e *Engine) Sessions() ([]RunState, []GrantView) {
	e.pruneChanged()
	pol := e.Policy()
	life, scope := pol.Lifetime, pol.Scope
	e.mu.Lock()
	defer e.mu.Unlock()
	count := map[*Run]int{}
	grants := make([]GrantView, 0, len(e.grants))
	for _, g := range e.grants {
		count[g.Run]++
		// What it covers under the scope in force.
		a, scoped := g.covered(scope)
		grants = append(grants, GrantView{
			ID: g.ID, Run: g.Run.ID, Key: g.Key.view(),
			Dest: a.dest, DestNames: a.names, Namespace: a.namespace, Scoped: scoped, Approved: g.Created.UTC(), Approver: g.Approver,
			BootID: g.BootID, Epoch: g.Epoch, Expires: g.expiresUnder(life),
		})
	}
	runs := make([]RunState, 0, len(e.runs))
	now := e.now()
	for _, r := range e.runs {
		rs := RunState{Socket: r.Socket, Since: r.Started.UTC(), Restored: r.PrevBoot, Grants: count[r]}
		if until, ok := e.cooldown[r.ID]; ok && now.Before(until) {
			rs.NoCardsUntil = until.UTC()
		}
		if r.pin == nil {
			rs.RunView = RunView{ID: r.ID, Label: r.Label, Launched: r.Launched}
			rs.Pending = true
		} else {
			rs.RunView = e.runView(r)
			rs.Argv = claimed(r.Argv)
		}
		runs = append(runs, rs)
	}
	slices.SortFunc(runs, func(a, b RunState) int { return a.Since.Compare(b.Since) })
	slices.SortFunc(grants, func(a, b GrantView) int { return a.Approved.Compare(b.Approved) })
	return runs, grants
}

// Counts returns the number of live runs, grants and pending cards.
func (e *Engine) Counts() (runs, grants, cards int) {
	e.pruneChanged()
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.runs), len(e.grants), len(e.cards)
}

// pruneChanged ends the started runs that no longer pass their live
// check: a pidfd tells of an exit, but nothing tells of an exec, after
// which the pid runs another program (process_changed), and where the
// platform has no pidfd, of an exit either. It ends the grants whose
// lifetime passed too: their timers run on the monotonic clock, late
// after the machine slept (package expiry). What the person is shown of
// the runs and their grants is so checked first; a request checks the
// runs on its own ancestry.
func (e *Engine) pruneChanged() {
	life, now := e.Policy().Lifetime, e.now()
	e.mu.Lock()
	var check []*Run
	for _, r := range e.runs {
		if r.pin != nil {
			check = append(check, r)
		}
	}
	var passed []*Grant
	for _, g := range e.grants {
		if expiry.Passed(now, g.expiresUnder(life)) {
			passed = append(passed, g)
		}
	}
	e.mu.Unlock()
	for _, g := range passed {
		e.endGrant(g, audit.ReasonExpired)
	}
	for _, r := range check {
		if reason, ok := r.check(); !ok {
			e.endFailed(r.ID, reason)
		}
	}
}
