package approvals

import (
	"testing"

	"github.com/postern/postern/audit"
)

// An answer the card does not offer is refused, and leaves the card up
// to be answered as it asks: a session answer to a policy change card
// (a change of the configuration is approved once), or a subject to
// bind on a card that offers no session (a policy change, a per-call
// card), where such an answer was taken as a once answer, and the
// person, who chose a session or a run, approved something else than
// they said.
func TestAnswerTheCardDoesNotOfferIsRefused(t *testing.T) {
	w := newWorld(t)
	applied := false
	id := w.e.ProposePolicy([]string{"approval: session → none"}, func() error { applied = true; return nil })
	for _, a := range []Answer{
		{Verdict: VerdictSession, Subject: -1, Approver: "test"},
		{Verdict: VerdictSession, Subject: 0, Approver: "test"},
		{Verdict: VerdictOnce, Subject: 0, Approver: "test"},
	} {
		if err := w.e.Answer(id, a, w.f.Peer(30)); err == nil || applied {
			t.Errorf("a policy change card answered %s with subject %d: %v, applied %v; want refused", a.Verdict, a.Subject, err, applied)
		}
		if cards, _ := w.e.Cards(); len(cards) != 1 || cards[0].ID != id {
			t.Fatalf("after a policy change card was answered %s with subject %d, the pending cards are %d", a.Verdict, a.Subject, len(cards))
		}
	}
	w.answer(id, VerdictOnce, 30)
	if !applied {
		t.Fatal("a policy change card approved once was not applied")
	}

	p := *w.e.Policy()
	p.Mode = audit.ModePerCall
	w.e.SetPolicy(&p)
	ch := w.decide(w.req(13))
	c := w.card()
	for _, a := range []Answer{
		{Verdict: VerdictSession, Subject: 1, Approver: "test"},
		{Verdict: VerdictOnce, Subject: 1, Approver: "test"},
	} {
		if err := w.e.Answer(c.ID, a, w.f.Peer(30)); err == nil {
			t.Errorf("a per-call card answered %s with subject %d: taken, want refused", a.Verdict, a.Subject)
			break
		}
	}
	w.answer(c.ID, VerdictDeny, 30)
	if d := got(t, ch); d.Allow || d.Reason != audit.ReasonDenied {
		t.Fatalf("a per-call card answered with a subject, then denied: allowed %v (%s)", d.Allow, d.Reason)
	}
}
