package approvals

import (
	"errors"
	"testing"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/confine"
)

func TestParseVerdict(t *testing.T) {
	for _, v := range []Verdict{VerdictDeny, VerdictOnce, VerdictSession} {
		if got, err := ParseVerdict(v.String()); err != nil || got != v {
			t.Errorf("ParseVerdict(%q) = %v, %v", v.String(), got, err)
		}
	}
	for _, bad := range []string{"", "yes", "Once", "verdict(0)"} {
		if v, err := ParseVerdict(bad); err == nil {
			t.Errorf("ParseVerdict(%q) = %v", bad, v)
		}
	}
}

// An answer without a verdict denies, whoever gives it.
func TestZeroVerdictDenies(t *testing.T) {
	w := newWorld(t)
	ch := w.decide(w.req(13))
	if err := w.e.Answer(w.card().ID, Answer{Subject: -1, Approver: "test"}, w.f.Peer(30)); err != nil {
		t.Fatal(err)
	}
	if d := got(t, ch); d.Allow || d.Reason != "denied" {
		t.Fatalf("zero verdict: %+v", d)
	}
}

// A session answer to a per-call card approves the one call, as a once
// answer does, and is refused from where a once answer is: the subject
// it names binds nothing, so choosing the requester does not leave the
// proposed run's tree free to answer.
func TestPerCallSessionAnswerCheckedAsOnce(t *testing.T) {
	w := newWorld(t)
	p := *w.e.Policy()
	p.Mode = audit.ModePerCall
	w.e.SetPolicy(&p)
	ch := w.decide(w.req(13))
	c := w.card()
	if c.Mode != audit.ModePerCall || c.Subjects[c.Selected].PID != 10 {
		t.Fatalf("card: mode %s, proposed pid %d", c.Mode, c.Subjects[c.Selected].PID)
	}
	// 16: started by the run's shell, outside the requester's own tree.
	w.f.Set(16, 11, 160, w.f.Exe("postern", "postern"), "postern", "approve")
	if err := w.e.Answer(c.ID, Answer{Verdict: VerdictOnce, Subject: -1}, w.f.Peer(16)); !errors.Is(err, ErrSelfApprove) {
		t.Fatalf("once from the run's tree: %v", err)
	}
	if err := w.e.Answer(c.ID, Answer{Verdict: VerdictSession, Subject: -1}, w.f.Peer(16)); !errors.Is(err, ErrSelfApprove) {
		t.Fatalf("session answer, from the run's tree: %v", err)
	}
	w.answer(c.ID, VerdictDeny, 30)
	got(t, ch)
}

// A session answer that binds a subject below the one its card proposes
// is refused from the proposed run's tree too: a run that starts its
// request in a session of its own must not approve it for a session from
// a process of its own, outside only the request's tree.
func TestSessionAnswerForALowerSubjectCheckedAgainstTheProposedRun(t *testing.T) {
	w := newWorld(t)
	ch := w.decide(w.req(13))
	c := w.card()
	if c.Mode != audit.ModeSession || c.Subjects[c.Selected].PID != 10 {
		t.Fatalf("card: mode %s, proposed pid %d", c.Mode, c.Subjects[c.Selected].PID)
	}
	w.f.Set(16, 11, 160, w.f.Exe("postern", "postern"), "postern", "approve")
	if err := w.e.Answer(c.ID, Answer{Verdict: VerdictSession, Subject: 0}, w.f.Peer(16)); !errors.Is(err, ErrSelfApprove) {
		t.Fatalf("session answer binding the requester, from the proposed run's tree: %v", err)
	}
	if err := w.e.Answer(c.ID, Answer{Verdict: VerdictSession, Subject: 0}, w.f.Peer(30)); err != nil {
		t.Fatalf("from outside: %v", err)
	}
	if d := got(t, ch); !d.Allow {
		t.Fatalf("decision %+v", d)
	}
}

// A session answer that binds a subject above the one its card proposes
// is refused from that subject's tree: the grant would cover the
// approver, which would have approved a session for itself.
func TestSessionAnswerForAHigherSubjectCheckedAgainstIt(t *testing.T) {
	w := newWorld(t)
	ch := w.decide(w.req(13))
	c := w.card()
	higher := -1
	for i, s := range c.Subjects {
		if s.PID == 5 {
			higher = i
		}
	}
	if c.Subjects[c.Selected].PID != 10 || higher < 0 {
		t.Fatalf("card proposes pid %d, offers pid 5 at %d", c.Subjects[c.Selected].PID, higher)
	}
	// 17: started by pid 5, outside the proposed run's tree and the
	// requester's, in a session of its own.
	w.f.Set(17, 5, 170, w.f.Exe("postern", "postern"), "postern", "approve")
	if err := w.e.Answer(c.ID, Answer{Verdict: VerdictSession, Subject: higher}, w.f.Peer(17)); !errors.Is(err, ErrSelfApprove) {
		t.Fatalf("session answer binding pid 5, from pid 5's tree: %v", err)
	}
	if _, grants := w.e.Sessions(); len(grants) != 0 {
		t.Fatalf("grants after the refused answer: %v", grants)
	}
	if err := w.e.Answer(c.ID, Answer{Verdict: VerdictSession, Subject: higher}, w.f.Peer(30)); err != nil {
		t.Fatalf("from outside: %v", err)
	}
	if d := got(t, ch); !d.Allow {
		t.Fatalf("decision %+v", d)
	}
}

// A run can start a run of its own (postern run inside it): the card for
// the inner run's request proposes the inner run, and an answer from the
// outer run's tree, in a session of its own (setsid), is from inside a
// run the request came through all the same: refused, as from the inner
// run's tree.
func TestAnswerFromARunTheRequestCameThroughIsRefused(t *testing.T) {
	w := newWorld(t)
	outer := w.launch("agent", 10)
	postern, sh, sshExe := w.f.Exe("postern", "postern"), w.f.Exe("sh", "a shell"), w.f.Exe("ssh", "ssh")
	w.f.Set(40, 10, 400, postern, "postern", "run", "--", "sh")
	w.f.Set(41, 40, 410, sh, "sh")
	w.f.Set(42, 41, 420, sshExe, "ssh", "prod-db-1")
	w.f.Set(43, 10, 430, postern, "postern", "approve") // the outer run's, in a session of its own
	inner := w.e.PrepareRun("inner", w.f.Peer(40).Process, func(id string) string { return "/sock." + id })
	if _, err := w.e.StartRun(inner.ID, 41, w.f.Peer(40), confine.Level{}); err != nil {
		t.Fatal(err)
	}
	ch := w.decide(w.runReq(inner, 42))
	c := w.card()
	if c.Run.ID != inner.ID {
		t.Fatalf("the card proposes %s, not the inner run %s (outer %s)", c.Run.ID, inner.ID, outer.ID)
	}
	for _, v := range []Verdict{VerdictOnce, VerdictSession} {
		if err := w.e.Answer(c.ID, Answer{Verdict: v, Subject: -1}, w.f.Peer(43)); !errors.Is(err, ErrSelfApprove) {
			t.Fatalf("%s answer from the outer run's tree: %v", v, err)
		}
	}
	w.answer(c.ID, VerdictOnce, 30)
	if d := got(t, ch); !d.Allow {
		t.Fatalf("the answer from outside every run: %+v", d)
	}
}
