package approvals

import (
	"testing"
	"time"

	"github.com/postern/postern/audit"

	"github.com/postern/postern/internal/confine"
)

// Two starts of one prepared run under way at once (its preparer reports
// two processes it launched, both still in their exec) bind the run to
// one of them: the other start fails, holds nothing of its process, and
// the gateway goes on.
func TestRunStartedTwiceAtOnceIsBoundOnce(t *testing.T) {
	w := newWorld(t)
	w.f.Set(14, 5, 140, w.f.Exe("claude", "the agent program"), "claude")
	run := w.e.PrepareRun("coder", w.f.Peer(5).Process, func(id string) string { return "/sock." + id })
	finish10, finish14 := w.f.Executing(10), w.f.Executing(14)
	type started struct {
		pid int
		err error
	}
	done := make(chan started, 2)
	for _, pid := range []int{10, 14} {
		go func() {
			_, err := w.e.StartRun(run.ID, pid, w.f.Peer(5), confine.Level{})
			done <- started{pid, err}
		}()
	}
	time.Sleep(300 * time.Millisecond) // both starts wait for the exec to end
	finish10()
	finish14()
	a, b := <-done, <-done
	if (a.err == nil) == (b.err == nil) {
		t.Fatalf("two starts of one run at once: pid %d: %v; pid %d: %v", a.pid, a.err, b.pid, b.err)
	}
	ok := a
	if a.err != nil {
		ok = b
	}
	if run.Process.PID != ok.pid || run.pin == nil || run.pin.PID != ok.pid {
		t.Fatalf("the start for pid %d succeeded, the run is bound to pid %d", ok.pid, run.Process.PID)
	}
}

// A process that connected to a run's socket as the run's descendant and
// was then reparented out of the run (its parent exited) is no longer
// the run's: its request through the socket is refused, not shown on a
// card that names the run and covered, once approved, by the run's
// session.
func TestRunSocketRefusesARequesterReparentedOutOfTheRun(t *testing.T) {
	w := newWorld(t)
	run := w.launch("coder", 10)
	if err := w.e.AdmitRun(run.ID)(w.f.Peer(13)); err != nil {
		t.Fatal(err)
	}
	// git (12) exits: ssh (13) is given to init.
	w.f.Kill(12)
	w.f.Set(13, 1, 130, w.f.Exe("ssh", "ssh"), "ssh", "git@github.com", "git-receive-pack")
	ch := w.decide(w.runReq(run, 13))
	select {
	case d := <-ch:
		if d.Allow || d.Reason != audit.ReasonIdentityMismatch {
			t.Fatalf("the request of a process outside the run, through its socket: %+v", d)
		}
		return
	case <-time.After(time.Second):
	}
	c := w.card()
	w.answer(c.ID, VerdictSession, 30)
	d := got(t, ch)
	t.Fatalf("a card for pid %d named run %s (pid %d), and its session answer decided allow=%v (%s, grant %s)", c.Requester[0].PID, c.Run.ID, c.Run.PID, d.Allow, d.Reason, d.Grant)
}

// A request through the socket of a run that has ended, or whose process
// executed another program, is refused, also where the policy signs
// without asking: the socket is the run's, and the run is gone.
func TestEndedRunSocketRefusesUnderPolicyNone(t *testing.T) {
	w := newWorld(t)
	w.e.SetPolicy(&Policy{Mode: audit.ModeNone, CardTimeout: 5 * time.Second, Cooldown: time.Minute, Hosts: w.cfg.Policy.Hosts, Scope: ScopeKey})
	run := w.launch("coder", 10)
	if d := got(t, w.decide(w.runReq(run, 13))); !d.Allow {
		t.Fatalf("refused while the run lives: %s", d.Reason)
	}
	// The run's process executes another program: a new process, which
	// the run's socket no longer serves, nor its descendants.
	w.f.Exec(10, w.f.Exe("other", "another program"), "other")
	if d := got(t, w.decide(w.runReq(run, 13))); d.Allow || d.Reason != audit.ReasonProcessChanged {
		t.Fatalf("a request through the socket of run %s, whose process executed another program: allow=%v (%s)", run.ID, d.Allow, d.Reason)
	}
	if run.Ended() == "" {
		t.Fatal("the run did not end")
	}
	if d := got(t, w.decide(w.runReq(run, 13))); d.Allow {
		t.Fatalf("a request through the socket of run %s, ended, was allowed: %s", run.ID, d.Reason)
	}
}

// A session approved on the agent's own socket for the process of a
// launched run binds that run, not a second run for the same process:
// revoking the run by its id ends every grant of its process.
func TestSessionForALaunchedRunsProcessBindsThatRun(t *testing.T) {
	w := newWorld(t)
	run := w.launch("coder", 10)
	d, c := w.approve(13)
	if !d.Allow || c.Subjects[c.Selected].PID != 10 {
		t.Fatalf("approved %+v on card %+v", d, c)
	}
	if d.Run != run.ID {
		t.Errorf("the session for pid 10 was bound to run %s, not to the run %s launched as pid 10", d.Run, run.ID)
	}
	if n, err := w.e.Revoke(run.ID); err != nil || n != 1 {
		t.Errorf("revoking run %s ended %d grants (%v)", run.ID, n, err)
	}
	ch := w.decide(w.req(13))
	select {
	case d := <-ch:
		if d.Allow {
			t.Fatalf("after run %s was revoked, its process's child was allowed: %s (grant %s, run %s)", run.ID, d.Reason, d.Grant, d.Run)
		}
	case <-time.After(time.Second): // a card: not covered
	}
}
