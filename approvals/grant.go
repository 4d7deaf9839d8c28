package approvals

import (
	"slices"
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
	// Scoped grants cover only what their card asked about (asked): the
	// verified host, or, for an SSHSIG signature, which authenticates to
	// no host, the namespace the card named.
	Scoped   bool
	Approver string
	Created  time.Time
	Expires  time.Time // zero: ends only with the run
	// asked is what its card asked about: what a scoped grant covers,
	// and one approved unscoped while session_scope is "destination".
	asked  askedDest
	ended  audit.Reason
	expiry *time.Timer // ends the grant at Expires, asked or not
}

// askedDest is the destination a card asked about: the verified host key's
// fingerprint and inventory names, or an SSHSIG signature's namespace;
// neither for a login to a destination not verified.
type askedDest struct {
	dest      string
	names     []string
	namespace string
}

// key is the destKey of the requests a grant for a covers, when scoped.
func (a askedDest) key() string {
	if a.dest == "" && a.namespace != "" {
		return namespaceKey(a.namespace)
	}
	return a.dest
}

// covered returns what g covers under scope: what its card asked about
// when it was approved scoped, or when scope narrows it (a tightening
// applies at once); ok is false when it covers the key's every use.
func (g *Grant) covered(scope Scope) (a askedDest, ok bool) {
	if !g.Scoped && scope != ScopeDestination {
		return askedDest{}, false
	}
	return g.asked, true
}

func newGrantID() string { return "G" + randomHex(4) }

// destKey is what a destination-scoped grant is compared on: the verified
// host key's fingerprint, or, for an SSHSIG signature (which authenticates
// to no destination), its namespace (namespaceKey). An authentication
// whose destination was not verified, and data the agent could not
// interpret (which may be a login elsewhere), have none to compare: ok is
// false, and no scoped grant covers them.
func destKey(r *Request, dest *DestView) (key string, ok bool) {
	switch {
	case dest != nil:
		return dest.Fingerprint, true
	case r.Purpose == PurposeSSHSig:
		return namespaceKey(r.Namespace), true
	case r.Purpose == PurposeAuth || r.Purpose == PurposeOther:
		return "", false
	}
	return "", true
}

// namespaceKey is the destKey of a signature in namespace ns: never a
// fingerprint, and never empty, the key of grants that are not scoped.
func namespaceKey(ns string) string { return "namespace " + ns }

// scope is what g covers when it is scoped, what its card asked about;
// nothing (the key's every use) when it is not, whatever the policy is
// now (covered says what it covers under it).
func (g *Grant) scope() askedDest {
	a, _ := g.covered(ScopeKey)
	return a
}

// scopeKey is the destKey of the requests g covers when it is scoped,
// or "" when it is not.
func (g *Grant) scopeKey() string { return g.scope().key() }

// coversDest reports whether g covers a request with the given
// destination. A grant is scoped when it was approved under
// session_scope = "destination", or when that is the policy now (a
// tightening applies at once): it covers what its card asked about.
func (g *Grant) coversDest(r *Request, dest *DestView, scope Scope) bool {
	a, scoped := g.covered(scope)
	if !scoped {
		return true
	}
	k, ok := destKey(r, dest)
	return ok && k == a.key()
}

// grantSlot is where a grant is found: the approved run's process (pid
// and start time), the key, and the destination the grant was approved
// for ("" for none).
type grantSlot struct {
	pid   int
	start uint64
	key   string
	dest  string
}

func slotOf(g *Grant) grantSlot {
	return grantSlot{pid: g.Run.Process.PID, start: g.Run.Process.StartTicks, key: g.Key.Fingerprint, dest: g.scopeKey()}
}

// addGrantLocked stores g and indexes it by its slot, and ends it when
// its lifetime passes, whether a request finds it then or not; e.mu held.
func (e *Engine) addGrantLocked(g *Grant) {
	e.grants[g.ID] = g
	e.armExpiryLocked(g, g.Expires)
	s := slotOf(g)
	e.bySlot[s] = append(e.bySlot[s], g)
	if rg := e.granted[s.pid]; rg != nil && rg.run == g.Run {
		rg.n++
	} else {
		e.granted[s.pid] = &runGrants{run: g.Run, n: 1}
	}
}

// armExpiryLocked has g end at at (none when zero), in place of when it
// was to end; e.mu held.
func (e *Engine) armExpiryLocked(g *Grant, at time.Time) {
	if g.expiry != nil {
		g.expiry.Stop()
		g.expiry = nil
	}
	if !at.IsZero() {
		g.expiry = time.AfterFunc(at.Sub(e.now()), func() { e.endGrant(g, audit.ReasonExpired) })
	}
}

// expiresUnder returns when g ends under a policy whose session lifetime
// is life (0: none): at its own expiry, or life after its approval if
// that is sooner, since a lifetime set or shortened after the approval
// tightens, and applies at once. Zero: it ends only with its run.
func (g *Grant) expiresUnder(life time.Duration) time.Time {
	if life <= 0 {
		return g.Expires
	}
	if end := g.Created.Add(life); g.Expires.IsZero() || end.Before(g.Expires) {
		return end
	}
	return g.Expires
}

// runGrants counts the grants of the run a pid last had grants for.
type runGrants struct {
	run *Run
	n   int
}

// knownRun answers for procid.Peer.Lineage: the start time of the run
// process at pid that has grants, while its pin shows it alive. What the
// bookkeeping above gets wrong can only cost a read: a run it names is
// taken only while its pidfd shows it alive.
func (e *Engine) knownRun(pid int) (uint64, bool) {
	e.mu.Lock()
	var run *Run
	if rg := e.granted[pid]; rg != nil {
		run = rg.run
	}
	e.mu.Unlock()
	if run == nil || run.pin == nil || !run.pin.Alive() {
		return 0, false
	}
	return run.Process.StartTicks, true
}

// removeGrantLocked forgets the grant id; e.mu held.
func (e *Engine) removeGrantLocked(id string) {
	g := e.grants[id]
	if g == nil {
		return
	}
	delete(e.grants, id)
	if g.expiry != nil {
		g.expiry.Stop()
	}
	s := slotOf(g)
	if rg := e.granted[s.pid]; rg != nil && rg.run == g.Run {
		if rg.n--; rg.n <= 0 {
			delete(e.granted, s.pid)
		}
	}
	rest := slices.DeleteFunc(e.bySlot[s], func(o *Grant) bool { return o == g })
	if len(rest) == 0 {
		delete(e.bySlot, s)
	} else {
		e.bySlot[s] = rest
	}
}

// grantsAt appends to dst the grants at slot s that can cover a request
// whose destination key is dest (ok false: a login to an unverified
// destination): those approved for that destination, and those approved
// for none, which cover any request unless the scope is narrowed
// (coversDest decides).
func (e *Engine) grantsAt(dst []*Grant, s grantSlot, dest string, ok bool) []*Grant {
	e.mu.Lock()
	defer e.mu.Unlock()
	if ok && dest != "" {
		s.dest = dest
		dst = append(dst, e.bySlot[s]...)
		s.dest = ""
	}
	return append(dst, e.bySlot[s]...)
}
