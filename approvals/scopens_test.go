package approvals

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/postern/postern/audit"
)

// signatureSession approves a session, under session_scope =
// "destination", for pid 13's signature in namespace "git", and checks
// that the card says it covers that namespace and no login, and that a
// second signature there rides it.
func (w *world) signatureSession() {
	w.t.Helper()
	ch := w.decide(w.sshsig(13))
	c := w.card()
	if !strings.Contains(c.Covers, "for signatures in the namespace the question names only, and no login") {
		w.t.Fatalf("the card says it covers %q", c.Covers)
	}
	w.answer(c.ID, VerdictSession, 30)
	if d := got(w.t, ch); !d.Allow {
		w.t.Fatal(d)
	}
	if d := w.e.Decide(context.Background(), w.sshsig(13)); d.Reason != audit.ReasonSession {
		w.t.Fatalf("a second signature in the namespace approved: %+v", d)
	}
}

// With session_scope = "destination", a session approved for signatures
// in one namespace (git commits) covers that namespace only: a signature
// in another (a file, an SSH certificate request) is asked about, as its
// card names a namespace the first did not.
func TestDestinationScopedSignatureGrantKeepsItsNamespace(t *testing.T) {
	w := newWorld(t)
	p := *w.e.Policy()
	p.Scope = ScopeDestination
	w.e.SetPolicy(&p)
	w.signatureSession()
	file := w.sshsig(13)
	file.Namespace = "file"
	ch := w.decide(file)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		select {
		case d := <-ch:
			t.Fatalf("a grant approved for namespace \"git\" decided a signature in namespace \"file\": %+v", d)
		default:
		}
		if cards, _ := w.e.Cards(); len(cards) > 0 || time.Now().After(deadline) {
			break
		}
	}
	c := w.card()
	if c.Namespace != "file" {
		t.Fatalf("the card for the other namespace: %+v", c)
	}
	w.answer(c.ID, VerdictDeny, 30)
	if d := got(t, ch); d.Allow {
		t.Fatal("signed in namespace \"file\" under a grant for \"git\"")
	}
	_, grants := w.e.Sessions()
	if len(grants) != 1 || grants[0].Namespace != "git" {
		t.Fatalf("sessions: %+v", grants)
	}
}

// The card's question shows a signature's namespace whole, however long
// (the agent bounds it): two namespaces that differ past 64 characters
// read as two, and a namespace-scoped session is approved for what was
// read.
func TestCardShowsTheNamespaceWhole(t *testing.T) {
	ns := strings.Repeat("n", 100) + "file"
	w, c, ch := perCallSignature(t, ns)
	if text := c.Text(); !strings.Contains(text, `namespace "`+ns+`"?`) {
		t.Fatalf("the card does not show the namespace whole:\n%s", text)
	}
	w.answer(c.ID, VerdictDeny, 30)
	got(t, ch)
}

// A signature in one namespace never waits on the card of a signature in
// another: each question has its card, as a login to another host has,
// so that a denial of the card for "git" is not recorded as the
// person's answer to a signature in "file" they were never shown.
func TestSignatureInAnotherNamespaceHasACardOfItsOwn(t *testing.T) {
	w := newWorld(t)
	w.f.Set(14, 12, 140, w.f.Exe("ssh-keygen", "ssh-keygen"))
	p := *w.e.Policy()
	p.Scope = ScopeDestination
	w.e.SetPolicy(&p)
	git := w.decide(w.sshsig(13))
	first := w.card()
	r := w.sshsig(14)
	r.Namespace = "file"
	file := w.decide(r)
	// It either joins the card for "git" or puts up its own.
	joined, cards := 0, 0
	for deadline := time.Now().Add(10 * time.Second); joined+cards < 2 && time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		w.e.mu.Lock()
		joined, cards = 0, len(w.e.cards)
		for _, c := range w.e.cards {
			joined += c.joined
		}
		w.e.mu.Unlock()
	}
	if joined > 0 {
		w.answer(first.ID, VerdictDeny, 30)
		d := got(t, file)
		t.Fatalf("a signature in namespace \"file\" was shown no card of its own: it waited on card %s, for namespace %q, and that card's denial decided it (%s on card %s)", first.ID, first.Namespace, d.Reason, d.Card)
	}
	all, _ := w.e.Cards()
	if len(all) != 2 || all[1].Namespace != "file" {
		t.Fatalf("the cards pending: %+v", all)
	}
	for _, c := range all {
		w.answer(c.ID, VerdictDeny, 30)
	}
	got(t, git)
	if d := got(t, file); d.Card != all[1].ID {
		t.Fatalf("the signature in \"file\" was decided on card %s, not its own (%s)", d.Card, d.Reason)
	}
}
