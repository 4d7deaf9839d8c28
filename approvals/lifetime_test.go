package approvals

import (
	"testing"
	"time"

	"github.com/postern/postern/audit"
)

// A run whose process exits while a person's session answer is being
// applied (after the answer found the run alive, before the grant is
// stored) gets no grant: the answer is refused as one given after the
// end, and no grant of the ended run is listed, or left for the gateway
// to end later under another reason.
func TestRunEndingWhileItsAnswerIsAppliedKeepsNoGrant(t *testing.T) {
	w := newWorld(t)
	run := w.launch("coder", 10)
	ch := w.decide(w.runReq(run, 13))
	c := w.card()
	w.mu.Lock()
	w.atVault = func() {
		// The run's process exits, and a listing of the sessions meanwhile
		// (as the watch of its exit would) ends the run.
		w.f.Kill(10)
		w.e.Sessions()
	}
	w.mu.Unlock()
	err := w.e.Answer(c.ID, Answer{Verdict: VerdictSession, Subject: -1, Approver: "test"}, w.f.Peer(30))
	if run.Ended() == "" {
		t.Fatal("the run did not end while the answer was applied")
	}
	if _, grants := w.e.Sessions(); len(grants) != 0 {
		t.Fatalf("a grant of a run that had ended was stored: %+v", grants)
	}
	if err == nil {
		t.Fatal("a session answer for a run that had ended was applied")
	}
	w.answer(c.ID, VerdictDeny, 30)
	if d := got(t, ch); d.Allow {
		t.Fatalf("decision %+v", d)
	}
}

// A grant ends when its session lifetime passes, whether or not the run
// asks again: it is no longer listed, and its end is recorded then as
// expired, not later under what ends the run.
func TestGrantEndsWhenItsLifetimePasses(t *testing.T) {
	w := newWorld(t)
	log := &eventLog{}
	w.e.SetAudit(log)
	p := *w.e.Policy()
	p.Lifetime = 100 * time.Millisecond
	w.e.SetPolicy(&p)
	d, _ := w.approve(13)
	if !d.Allow || d.Grant == "" {
		t.Fatalf("decision %+v", d)
	}
	time.Sleep(300 * time.Millisecond)
	if _, grants := w.e.Sessions(); len(grants) != 0 {
		t.Fatalf("a grant past its lifetime is listed: %+v", grants)
	}
	w.f.Kill(10)
	w.e.Sessions()
	var ends []audit.Reason
	log.mu.Lock()
	for _, ev := range log.events {
		if ev.Type == audit.EventSessionEnded && ev.Grant == d.Grant {
			ends = append(ends, ev.Reason)
		}
	}
	log.mu.Unlock()
	if len(ends) != 1 || ends[0] != audit.ReasonExpired {
		t.Fatalf("the grant's end was recorded as %v", ends)
	}
}
