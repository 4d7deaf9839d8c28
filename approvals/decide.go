package approvals

import (
	"context"
	"errors"
	"time"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/expiry"
	"github.com/postern/postern/internal/procid"
)

func allow(mode audit.Mode, reason audit.Reason) Decision {
	return Decision{Allow: true, Mode: mode, Reason: reason}
}
func deny(mode audit.Mode, reason audit.Reason) Decision { return Decision{Mode: mode, Reason: reason} }

// Decide decides a request. It never waits while the vault is locked; it
// re-checks the epoch after a person answers; a session grant covers the
// request only after the run, its nonce, the boot id and the epoch have
// been checked against live evidence.
func (e *Engine) Decide(ctx context.Context, r *Request) Decision {
	d := e.decide(ctx, r)
	return e.conclude(r, d)
}

// conclude records a decision: a denial as action_denied; an allowed
// action as sign (or command_approved), durable before the action runs. If
// that record cannot be written the action is refused.
func (e *Engine) conclude(r *Request, d Decision) Decision {
	if !d.Allow {
		e.noteRefusal(r, &d)
		ev := e.requestEvent(audit.EventActionDenied, r, d)
		// A refused re-approval is recorded with what ended the earlier
		// approval: the request was denied because of it.
		if why, ok := d.CardReason.Reauth(); ok {
			ev.Reason = why
			ev.Detail["answer"] = string(d.Reason)
		}
		if d.Card != "" {
			ev.Card = d.Card
		}
		if ev.Run == "" {
			ev.Run = d.Run
		}
		e.recordRefusal(r, ev)
		return d
	}
	typ := audit.EventSign
	if r.Action == ActionCommand {
		typ = audit.EventCommandApproved
	}
	ev := e.requestEvent(typ, r, d)
	ev.Card = d.Card
	if ev.Run == "" {
		ev.Run = d.Run
	}
	if r.Overlap {
		// Stamped now, with the epoch it was decided in; written when
		// the caller asks.
		e.stamp(&ev)
		d.record = &allowRecord{e: e, r: r, d: d, ev: ev}
		return d
	}
	if err := e.recordedAllow(r, d, e.record(ev)); err != nil {
		return Decision{Mode: d.Mode, Reason: audit.ReasonAuditFailed}
	}
	return d
}

// recordedAllow notes, for postern why, the allow d of r whose record
// returned err: allowed, or refused after all (audit_failed) when it was
// not recorded.
func (e *Engine) recordedAllow(r *Request, d Decision, err error) error {
	if err != nil {
		refused := Decision{Mode: d.Mode, Reason: audit.ReasonAuditFailed, Card: d.Card, Run: d.Run}
		e.noteRefusal(r, &refused)
		return err
	}
	e.noteWhy(r, d, false, d.chain)
	return nil
}

// noteRefusal remembers the refusal d of r for postern why, with the
// requester's chain.
func (e *Engine) noteRefusal(r *Request, d *Decision) {
	if d.chain == nil && r.Requester != nil {
		d.chain = append(procid.Chain{r.Requester.Process}, r.Requester.Ancestors()...)
	}
	e.noteWhy(r, *d, false, d.chain)
}

// Refused records a request refused before any decision was asked for
// (the agent was locked, the key is unknown, the request broke the
// connection's session binding).
func (e *Engine) Refused(r *Request, reason audit.Reason) {
	e.recordRefusal(r, e.requestEvent(audit.EventActionDenied, r, Decision{Reason: reason}))
}

// decide decides r. A request that waited on a card shown for another
// request is decided again once that card is answered, from the start:
// under the policy, the host inventory and the grants in force then (a
// host marked production meanwhile is asked about on a card of its own).
func (e *Engine) decide(ctx context.Context, r *Request) Decision {
	for {
		if d, again := e.decideNow(ctx, r); !again {
			return d
		}
	}
}

// vaultRead is the vault's epoch as a request read it, with the count of
// the epoch's changes the engine had seen before (Engine.epochChanges).
type vaultRead struct{ epoch, changes uint64 }

// decideNow decides r under the policy and host inventory in force now;
// again: r waited on a card shown for another request, which was answered.
func (e *Engine) decideNow(ctx context.Context, r *Request) (d Decision, again bool) {
	at := vaultRead{changes: e.epochChanges.Load()}
	locked, epoch := e.vault()
	at.epoch = epoch
	if locked {
		return deny("", audit.ReasonVaultLocked), false
	}
	// A run's socket serves nothing once the run has ended, whatever the
	// policy says: a program the run left behind keeps its connection.
	if why := e.socketRunEnded(r, false); why != "" {
		return deny("", why), false
	}
	p := e.Policy()
	// The requester's ancestry and command line are read only when needed:
	// for rules on executables, for hashed known_hosts entries, for cards.
	var chain procid.Chain
	ancestry := func() procid.Chain {
		if chain == nil {
			chain = append(procid.Chain{r.Requester.Process}, r.Requester.Ancestors()...)
		}
		return chain
	}
	var argv []string
	var dest *DestView
	if r.Dest != nil {
		// Names come from the host inventory; known_hosts, which the run
		// can edit, is shown as what it says, and can only refuse a key
		// (@revoked).
		names, classes := e.Hosts().Lookup(r.Dest.HostKey)
		r.inventory = &hostNames{names, classes}
		res := p.Hosts.Lookup(r.Dest.HostKey, nil)
		if res.Hashed > 0 {
			argv = e.procs.Argv(r.Requester.PID)
			res = p.Hosts.Lookup(r.Dest.HostKey, hostCandidates(argv))
		}
		if res.Revoked {
			return deny("", audit.ReasonHostKeyRevoked), false
		}
		dest = &DestView{Fingerprint: r.Dest.Fingerprint(), Names: names, Classes: classes, KnownHosts: res.Names, Hashed: res.Hashed, Forwarding: r.Dest.Forwarding, User: r.Dest.User}
	}
	var progs []program
	f := facts{key: r.Key, programs: func() []program {
		if progs == nil {
			progs = e.programs(r)
		}
		return progs
	}}
	if dest != nil {
		f.names, f.classes = dest.Names, dest.Classes
	}
	// A destination with no name could be any host.
	unverified := unverifiedReason(r, dest)
	f.anyHost = unverified != "" || (dest != nil && len(dest.Names) == 0)
	forwarding := r.Forwarded || (dest != nil && dest.Forwarding)
	mode := p.inForce(&f, forwarding)
	// Why a request is asked about on every call, beside the policy's
	// rules (perCallWhy), for its card.
	var perCall []string
	if r.Key.Confirm {
		perCall = append(perCall, "the key was added with ssh-add -c: every use is confirmed")
	}
	if r.Key.Confirm || r.RetryOf != "" || r.Running != "" {
		mode = Stricter(mode, audit.ModePerCall)
	}
	if _, ok := destKey(r, dest); !ok && p.Scope == ScopeDestination {
		// No verified destination to bind a session to.
		perCall = append(perCall, `session_scope = "destination" in the configuration, and no verified destination to bind a session to`)
		mode = Stricter(mode, audit.ModePerCall)
	}
	if r.Requester.PID <= 1 {
		// No process to bind a session to: init (the bastion's requester
		// for a client whose parent exited) is never a run, since a grant
		// bound to it would cover every process and end with none.
		perCall = append(perCall, "the requester is init: no process to bind a session to")
		mode = Stricter(mode, audit.ModePerCall)
	}
	switch mode {
	case audit.ModeDeny:
		d := deny(mode, audit.ReasonPolicyDeny)
		d.because = p.explain(&f, forwarding).Because
		return d, false
	case audit.ModeNone:
		// Nothing else checks the run against live evidence (a grant's
		// run is checked as the grant is, and before a card is shown).
		if why := e.socketRunEnded(r, true); why != "" {
			return deny(mode, why), false
		}
		d := allow(mode, audit.ReasonPolicyNone)
		d.because = p.explain(&f, forwarding).Because
		return d, false
	}
	if mode == audit.ModeSession {
		g, unchecked, run := e.covering(r, dest, epoch, p)
		switch {
		case g != nil:
			return Decision{Allow: true, Mode: mode, Reason: audit.ReasonSession, Grant: g.ID, Run: g.Run.ID}, false
		case unchecked:
			// A grant that may cover the request could not be looked
			// for or checked: refused, not put to a person as a first
			// approval.
			d := deny(mode, audit.ReasonOutOfResources)
			if run != nil {
				d.Run = run.ID
			}
			return d, false
		}
	}
	// A card shows the run whose socket the request came through as the
	// program it was registered running: one whose process has executed
	// another since is a run that has ended, and is shown to no one.
	if why := e.socketRunEnded(r, true); why != "" {
		return deny(mode, why), false
	}
	if argv == nil {
		argv = e.procs.Argv(r.Requester.PID)
	}
	if mode == audit.ModePerCall {
		// As postern check says it, when the policy asks.
		if why := p.explain(&f, forwarding); why.Mode == audit.ModePerCall {
			perCall = append([]string{why.Because}, perCall...)
		}
	}
	return e.ask(ctx, r, mode, ancestry(), argv, dest, unverified, perCall, at, p)
}

// programs returns the verified executables exe rules are matched
// against: the requester's and, for a request through a run's socket, the
// run's, while it is still the process registered.
func (e *Engine) programs(r *Request) []program {
	out := make([]program, 0, 2)
	if p, ok := programOf(r.Requester); ok {
		out = append(out, p)
	}
	if r.Channel.Kind == ChannelRun {
		e.mu.Lock()
		run := e.runs[r.Channel.Run]
		var pin *procid.Peer
		if run != nil {
			pin = run.pin
		}
		e.mu.Unlock()
		if pin != nil {
			if _, live := run.check(); live {
				if p, ok := programOf(pin); ok {
					out = append(out, p)
				}
			}
		}
	}
	return out
}

// Why a request's destination is not known.
const (
	unverifiedLogin = "the client did not prove where it connects (no session-bind)"
	unverifiedData  = "the agent could not tell what the signature is for (neither an SSH login nor an SSHSIG signature)"
)

// unverifiedReason says why r has no destination the agent verified,
// when it may have one: a login on a connection without session-bind, or
// data the agent could not interpret. A signature for a namespace (a git
// commit) logs in nowhere.
func unverifiedReason(r *Request, dest *DestView) string {
	switch {
	case dest != nil:
		return ""
	case r.Purpose == PurposeAuth:
		return unverifiedLogin
	case r.Purpose == PurposeOther:
		return unverifiedData
	}
	return ""
}

// covering returns a live grant that covers r. The requester's live
// ancestry is walked once, nearest first (a run process with grants,
// pinned and alive, stands for its pid without a read: knownRun); at
// each ancestor the grants bound to that process for r's key are found
// by map (see grantSlot) and each is checked against live evidence
// (holds, which verifies the run's program); those that no longer hold
// are ended. The cost does not grow with the number of grants. When none
// covers r and the ancestry could not be read, or the run of a grant that
// might cover it checked, for want of descriptors or memory, unchecked
// is true (with that run, when one).
func (e *Engine) covering(r *Request, dest *DestView, epoch uint64, p *Policy) (found *Grant, unchecked bool, run *Run) {
	now := e.now()
	k, kok := destKey(r, dest)
	var cands []*Grant
	err := r.Requester.Lineage(e.knownRun, func(pid int, start uint64) bool {
		cands = e.grantsAt(cands[:0], grantSlot{pid: pid, start: start, key: r.Key.Fingerprint}, k, kok)
		for _, g := range cands {
			if !g.coversDest(r, dest, p.Scope) {
				continue
			}
			switch e.holds(g, epoch, now, p.Lifetime) {
			case holdsYes:
				found = g
				return false
			case holdsUnchecked:
				unchecked, run = true, g.Run
			}
		}
		return true
	})
	if found != nil {
		return found, false, nil
	}
	return nil, unchecked || errors.Is(err, procid.ErrNoResources), run
}

// What holds found of a grant.
type holding int

const (
	holdsNo        holding = iota // it does not hold (and is ended when it never will)
	holdsYes                      // it holds
	holdsUnchecked                // its run could not be checked (ReasonOutOfResources)
)

// holds checks a grant found on the requester's ancestry against live
// evidence: this boot, this epoch, not expired (under life, the session
// lifetime in force, too), its run still the process that was approved
// (alive, same start time, same program) with the same launch nonce. A
// grant that fails for good is ended.
func (e *Engine) holds(g *Grant, epoch uint64, now time.Time, life time.Duration) holding {
	switch {
	case g.BootID != e.bootID:
		e.endGrant(g, audit.ReasonGatewayRestarted)
		return holdsNo
	case g.Epoch != epoch:
		e.endGrant(g, audit.ReasonVaultStateChanged)
		return holdsNo
	case expiry.Passed(now, g.expiresUnder(life)):
		e.endGrant(g, audit.ReasonExpired)
		return holdsNo
	}
	run := g.Run
	switch reason, ok := run.check(); {
	case reason == audit.ReasonOutOfResources:
		return holdsUnchecked
	case !ok:
		e.EndRun(run.ID, reason)
		return holdsNo
	case g.Nonce != run.Nonce:
		return holdsNo
	}
	return holdsYes
}
