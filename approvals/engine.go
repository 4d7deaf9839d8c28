package approvals

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/postern/postern/internal/knownhosts"
	"github.com/postern/postern/internal/procid"
)

// A Confirmer asks a person a yes/no question. An error means the
// question could not be asked, which is never a yes.
type Confirmer interface {
	Confirm(ctx context.Context, prompt string) (bool, error)
}

// Policy is the approval policy in force.
type Policy struct {
	Mode        Mode
	CardTimeout time.Duration
	Hosts       *knownhosts.DB
}

// Engine is the gateway's Decider.
type Engine struct {
	Confirm Confirmer
	Procs   *procid.Table
	Log     *slog.Logger

	policy atomic.Pointer[Policy]
}

// SetPolicy installs p for the requests decided from now on.
func (e *Engine) SetPolicy(p *Policy) { e.policy.Store(p) }

// Policy returns the policy in force.
func (e *Engine) Policy() *Policy { return e.policy.Load() }

// Decide applies the policy to r. A key added with ssh-add -c is
// confirmed on every use whatever the mode, as with ssh-agent.
func (e *Engine) Decide(ctx context.Context, r *Request) Decision {
	p := e.Policy()
	switch {
	case p.Mode == ModeDeny:
		return Decision{Mode: p.Mode, Reason: "policy_deny"}
	case p.Mode == ModeNone && !r.Key.Confirm:
		return Decision{Allow: true, Mode: p.Mode, Reason: "policy_none"}
	}
	ctx, cancel := context.WithTimeout(ctx, p.CardTimeout)
	defer cancel()
	ok, err := e.Confirm.Confirm(ctx, e.describe(r, p).Prompt())
	switch {
	case err != nil && ctx.Err() != nil:
		return Decision{Mode: p.Mode, Reason: "timeout"}
	case err != nil:
		e.Log.Warn("cannot ask for approval", "err", err)
		return Decision{Mode: p.Mode, Reason: "no_approver"}
	case !ok:
		return Decision{Mode: p.Mode, Reason: "denied"}
	}
	return Decision{Allow: true, Mode: p.Mode, Reason: "approved"}
}
