package approvals

import (
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/audit"
)

// A session approved under session_scope = "key" is narrowed, when the
// scope narrows to "destination", to what its card asked about: the host
// of a login, or the namespace of a signature. It still covers that, and
// postern sessions lists it as covering that alone, where it covered
// nothing and was listed as covering the key's every use.
func TestNarrowedScopeNarrowsEarlierGrantsToTheirCards(t *testing.T) {
	w := newWorld(t)
	one, two := hostKey(t), hostKey(t)
	login := w.decide(w.authTo(13, one))
	w.answer(w.card().ID, VerdictSession, 30)
	if d := got(t, login); d.Reason != audit.ReasonApprovedSession {
		t.Fatalf("login: %+v", d)
	}
	p := *w.e.Policy()
	p.Scope = ScopeDestination
	w.e.SetPolicy(&p)

	_, grants := w.e.Sessions()
	if len(grants) != 1 || grants[0].Dest != ssh.FingerprintSHA256(one) {
		t.Errorf("after the scope narrowed, the grant approved for a login to %s is listed as %+v", ssh.FingerprintSHA256(one), grants)
	}
	ch := w.decide(w.authTo(13, one))
	if d, c := w.decisionOrCard(ch); c != nil || d.Reason != audit.ReasonSession {
		if c != nil {
			w.answer(c.ID, VerdictDeny, 30)
			t.Fatalf("after the scope narrowed, the grant approved for a login to the host does not cover it: a card (%s)", c.Reason)
		}
		t.Fatalf("after the scope narrowed, the grant approved for a login to the host does not cover it: %+v", d)
	}
	other := w.decide(w.authTo(13, two))
	w.answer(w.card().ID, VerdictDeny, 30)
	if d := got(t, other); d.Allow {
		t.Fatalf("after the scope narrowed, the grant covers another host: %+v", d)
	}
}

// So is one approved for a signature: to its namespace.
func TestNarrowedScopeNarrowsASignatureGrantToItsNamespace(t *testing.T) {
	w := newWorld(t)
	sig := w.decide(w.sshsig(13))
	w.answer(w.card().ID, VerdictSession, 30)
	got(t, sig)
	p := *w.e.Policy()
	p.Scope = ScopeDestination
	w.e.SetPolicy(&p)
	if _, grants := w.e.Sessions(); len(grants) != 1 || grants[0].Namespace != "git" || grants[0].Dest != "" {
		t.Errorf("after the scope narrowed, the grant approved for a signature in \"git\" is listed as %+v", grants)
	}
	if d, c := w.decisionOrCard(w.decide(w.sshsig(13))); c != nil || d.Reason != audit.ReasonSession {
		t.Fatalf("after the scope narrowed, a signature in the namespace its card named: %+v, card %v", d, c != nil)
	}
}

// One approved for data the gateway could not interpret (a login to no
// verified host, maybe) covers nothing once the scope narrows, and is
// listed as scoped to nothing, where it was listed like a grant for the
// key's every use.
func TestNarrowedScopeListsAGrantForNoVerifiedHostAsScoped(t *testing.T) {
	w := newWorld(t)
	ch := w.decide(w.req(13))
	w.answer(w.card().ID, VerdictSession, 30)
	got(t, ch)
	if _, grants := w.e.Sessions(); len(grants) != 1 || grants[0].Scoped {
		t.Fatalf("under session_scope = key: %+v", grants)
	}
	p := *w.e.Policy()
	p.Scope = ScopeDestination
	w.e.SetPolicy(&p)
	if _, grants := w.e.Sessions(); len(grants) != 1 || !grants[0].Scoped || grants[0].Dest != "" || grants[0].Namespace != "" {
		t.Fatalf("after the scope narrowed, a grant approved for no verified host is listed as %+v", grants)
	}
	ch = w.decide(w.req(13))
	d, c := w.decisionOrCard(ch)
	if c != nil {
		w.answer(c.ID, VerdictDeny, 30)
		d = got(t, ch)
	}
	if d.Allow {
		t.Fatalf("after the scope narrowed, a grant approved for no verified host still covers: %+v", d)
	}
}
