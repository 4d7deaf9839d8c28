package approvals

import (
	"encoding/json"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/confine"
	"github.com/postern/postern/internal/expiry/expirytest"
)

// A process that exits while a person's session answer for it is being
// applied (after the answer made it a run and found it alive, before the
// grant is stored) gets no grant: the answer is refused as one given
// after the end, and no grant of the ended run is listed, or left for
// the gateway to end later under another reason.
func TestRunEndingWhileItsAnswerIsAppliedKeepsNoGrant(t *testing.T) {
	w := newWorld(t)
	c, ch, err := w.answerAcross(func() {
		// The process exits, and a listing of the sessions meanwhile
		// (as the watch of its exit would) ends its run.
		w.f.Kill(10)
		if runs, _ := w.e.Sessions(); len(runs) != 0 {
			t.Errorf("a run whose process exited is listed: %+v", runs)
		}
	})
	if c.Subjects[c.Selected].PID != 10 {
		t.Fatalf("card %+v", c)
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

// A card for a request through a run's socket is withdrawn when the run
// ends: a request through the socket of a run that has ended is refused,
// and one that was waiting for a person when the run ended is refused
// too, not signed once on an answer given after the end (a program the
// run left behind, still connected to its socket, is no longer the run).
func TestRunEndingWithdrawsTheCardsOfItsSocket(t *testing.T) {
	w := newWorld(t)
	run := w.launch("coder", 10)
	ch := w.decide(w.runReq(run, 13))
	c := w.card()
	// The run's process exits; its descendant 13 lives on.
	w.f.Kill(10)
	w.e.Sessions()
	if run.Ended() == "" {
		t.Fatal("the run did not end")
	}
	err := w.e.Answer(c.ID, Answer{Verdict: VerdictOnce, Subject: -1, Approver: "test"}, w.f.Peer(30))
	if d := got(t, ch); d.Allow {
		t.Fatalf("a request through the socket of a run that had ended was allowed (%s) on an answer given after the end", d.Reason)
	} else if d.Reason != audit.ReasonProcessExited {
		t.Fatalf("refused as %q", d.Reason)
	}
	if !errors.Is(err, ErrNoCard) {
		t.Fatalf("the answer to a withdrawn card: %v", err)
	}
}

// A run restored after a restart is restored from the display context
// once: a later restart restores it again from what the gateway that
// restored it left (one run for its process, not one for each gateway it
// outlived), or, when that gateway was killed, from what the one before
// left; and when it ended meanwhile (here its process executes its own
// executable again, a new process), restores nothing of it.
func TestRestoredRunIsRestoredOnceAndNotAfterItEnds(t *testing.T) {
	w := newWorld(t)
	w.launch("agent", 10)
	w.e.Stop()
	restart := func(boot string) (*Engine, []*Run) {
		cfg := w.cfg
		cfg.BootID = boot
		e := NewEngine(cfg)
		return e, e.Restore()
	}
	if _, rs := restart("boot-2"); len(rs) != 1 {
		t.Fatalf("restored %d runs", len(rs))
	}
	// That gateway was killed: the next one serves the run again, from
	// what the first left.
	e2, rs := restart("boot-3")
	if len(rs) != 1 || rs[0].PrevBoot != "boot-1" {
		t.Fatalf("after a gateway that was killed, restored %d runs", len(rs))
	}
	e2.Stop()
	e3, rs := restart("boot-4")
	if len(rs) != 1 || rs[0].PrevBoot != "boot-3" {
		for _, r := range rs {
			t.Errorf("restored as run %s of boot %s", r.ID, r.PrevBoot)
		}
		t.Fatalf("a run alive through two restarts was restored %d times", len(rs))
	}
	claude, _ := w.f.Table.Inspect(10)
	w.f.Exec(10, claude.Exe.Path, "claude")
	if runs, _ := e3.Sessions(); len(runs) != 0 {
		t.Fatalf("a run whose process executed again lives on: %+v", runs)
	}
	e3.Stop()
	if _, rs := restart("boot-5"); len(rs) != 0 {
		t.Fatalf("a run that ended (process_changed) was restored again after a later restart, as run %s of boot %s", rs[0].ID, rs[0].PrevBoot)
	}
}

// A request whose requester is init, as the bastion makes one for a
// client whose parent exited (its requester is the client's parent, and
// an orphan's is init), binds no session: init is never a run, since a
// grant bound to it would cover every process of the system and end
// with none of them. Its card asks about this call only. (Every approver
// descends from init, so only the gateway's askpass dialog, whose yes
// approves the card as the policy asks, could answer it.)
func TestInitIsNeverARun(t *testing.T) {
	w := newWorld(t)
	r := w.req(1)
	r.Channel = Channel{Kind: ChannelBastion}
	ch := w.decide(r)
	c := w.card()
	if err := w.e.Answer(c.ID, Answer{Verdict: VerdictSession, Subject: -1, Approver: "askpass"}, nil); err != nil {
		t.Fatal(err)
	}
	if d := got(t, ch); !d.Allow {
		t.Fatalf("decision %+v", d)
	}
	if _, grants := w.e.Sessions(); len(grants) != 0 {
		t.Fatalf("a session answer on a card for init's request bound %s (pid %d): %+v", c.Run.Name, c.Run.PID, grants)
	}
	if c.Mode != audit.ModePerCall {
		t.Fatalf("the card for init's request offered a %s approval", c.Mode)
	}
}

// A run that ends while its start is under way ("postern run" killed as
// it reports the process it launched, which is still in its exec) is not
// registered after its end: the start fails, and nothing of the launched
// process is held for it.
func TestRunEndingDuringItsStartIsNotRegistered(t *testing.T) {
	w := newWorld(t)
	run := w.e.PrepareRun("coder", w.f.Peer(5).Process, func(id string) string { return "/sock." + id })
	finish := w.f.Executing(10)
	done := make(chan error, 1)
	go func() {
		_, err := w.e.StartRun(run.ID, 10, w.f.Peer(5), confine.Level{})
		done <- err
	}()
	time.Sleep(300 * time.Millisecond) // StartRun waits for the exec to end
	w.e.EndRun(run.ID, audit.ReasonProcessExited)
	finish()
	err := <-done
	if err == nil {
		t.Fatal("a run that had ended was registered as started")
	}
	if run.pin != nil {
		t.Fatalf("the ended run holds the launched process (%v)", err)
	}
}

// A run whose process executed another program (here its own executable
// again) while no gateway ran is a new process: the next gateway does not
// serve the run's socket for it, as the run it was.
func TestRunThatExecutedWhileNoGatewayRanIsNotRestored(t *testing.T) {
	w := newWorld(t)
	w.launch("agent", 10)
	w.e.Stop()
	claude, _ := w.f.Table.Inspect(10)
	w.f.Exec(10, claude.Exe.Path, "claude")
	cfg := w.cfg
	cfg.BootID = "boot-2"
	if rs := NewEngine(cfg).Restore(); len(rs) != 0 {
		t.Fatalf("pid %d executed another program between gateways, and was restored as run %s (label %q)", rs[0].Process.PID, rs[0].ID, rs[0].Label)
	}
}

// A run whose pid went, while no gateway ran, to another process of the
// same program is not restored, also from a file that names no address
// space layout (one written before layouts were kept): the start time
// tells the two apart.
func TestRunWhosePidWasReusedWhileNoGatewayRanIsNotRestored(t *testing.T) {
	w := newWorld(t)
	w.launch("agent", 10)
	w.e.Stop()
	b, err := os.ReadFile(w.cfg.ContextFile)
	if err != nil {
		t.Fatal(err)
	}
	var past []map[string]any
	if err := json.Unmarshal(b, &past); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	for _, p := range past {
		delete(p, "layout")
	}
	if b, err = json.Marshal(past); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w.cfg.ContextFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	claude, _ := w.f.Table.Inspect(10)
	w.f.Kill(10)
	w.f.Set(10, 5, 900, claude.Exe.Path, "claude")
	cfg := w.cfg
	cfg.BootID = "boot-2"
	if rs := NewEngine(cfg).Restore(); len(rs) != 0 {
		t.Fatalf("pid %d, another process since, was restored as run %s (label %q)", rs[0].Process.PID, rs[0].ID, rs[0].Label)
	}
}

// A run no approval covered has its end recorded as its registration
// was (session_ended, with the run and no grant): the audit log does not
// leave it registered for good.
func TestEndOfARunWithoutGrantsIsRecorded(t *testing.T) {
	w := newWorld(t)
	log := &eventLog{}
	w.e.SetAudit(log)
	run := w.launch("coder", 10)
	w.f.Kill(10)
	w.e.Sessions()
	if run.Ended() == "" {
		t.Fatal("the run did not end")
	}
	var ends []audit.Event
	log.mu.Lock()
	for _, ev := range log.events {
		if ev.Type == audit.EventSessionEnded {
			ends = append(ends, ev)
		}
	}
	log.mu.Unlock()
	if len(ends) != 1 || ends[0].Run != run.ID || ends[0].Grant != "" || ends[0].Reason != audit.ReasonProcessExited || ends[0].Label != "coder" {
		t.Fatalf("the end of a run without grants was recorded as %+v", ends)
	}
}

// A session_lifetime set, or shortened, after a grant was approved
// applies to that grant at once, as every tightening does: a grant older
// than the lifetime now in force covers nothing more, and ends (expired).
func TestShorterLifetimeEndsOlderGrants(t *testing.T) {
	w := newWorld(t)
	d, _ := w.approve(13)
	if !d.Allow || d.Grant == "" {
		t.Fatalf("decision %+v", d)
	}
	p := *w.e.Policy()
	p.Lifetime = time.Nanosecond
	w.e.SetPolicy(&p)
	w.f.Set(14, 12, 140, w.f.Exe("ssh", "ssh"))
	ch := w.decide(w.req(14))
	select {
	case d := <-ch:
		t.Fatalf("a grant approved before session_lifetime was set to %v, and older than that, still covers: %+v", p.Lifetime, d)
	case <-time.After(200 * time.Millisecond):
	}
	w.answer(w.card().ID, VerdictDeny, 30)
	got(t, ch)
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, grants := w.e.Sessions(); len(grants) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a grant older than the lifetime now in force is still listed")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A grant's session lifetime counts the time the machine slept: Go
// compares times read from time.Now by the monotonic clock, which stops
// during a suspend, so a grant of an hour approved before a laptop slept
// through the night would otherwise still sign in the morning, and be
// listed as live. The request counts it itself too, with no listing
// before it to end the grant.
func TestGrantLifetimeCountsASuspend(t *testing.T) {
	for _, listed := range []bool{true, false} {
		w := newWorld(t)
		sleep := sleepable(t, w)
		p := *w.e.Policy()
		p.Lifetime = time.Hour
		w.e.SetPolicy(&p)
		d, _ := w.approve(13)
		if !d.Allow || d.Grant == "" {
			t.Fatalf("decision %+v", d)
		}
		sleep(2 * time.Hour)
		if listed {
			if _, grants := w.e.Sessions(); len(grants) != 0 {
				t.Errorf("a grant whose lifetime passed while the machine slept is listed: %+v", grants)
			}
		}
		ch := w.decide(w.req(13))
		c := w.card()
		w.answer(c.ID, VerdictDeny, 30)
		if d := got(t, ch); d.Allow {
			t.Fatalf("listed first %v: a grant whose lifetime passed while the machine slept allowed: %+v", listed, d)
		}
	}
}

// sleepable sets w's engine clock to read the time now, and returns what
// makes it read as a machine that slept for d since.
func sleepable(t *testing.T, w *world) (sleep func(d time.Duration)) {
	var mu sync.Mutex
	var slept time.Duration
	w.e.clock = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return expirytest.Slept(t, time.Now(), slept)
	}
	return func(d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		slept = d
	}
}
