package approvals

import (
	"strings"
	"testing"
	"time"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/safetext"
)

// A run that was prepared and never started (postern run exited first,
// or its preparation expired) was never registered: nothing of it is
// recorded, in the audit log or among the ended runs (the display
// context), where its end
// stood there as a session_ended with no run_registered before it.
func TestARunNeverStartedLeavesNoEnd(t *testing.T) {
	defer func(d time.Duration) { prepareTimeout = d }(prepareTimeout)
	w := newWorld(t)
	log := &eventLog{}
	w.e.SetAudit(log)
	exited := w.e.PrepareRun("exited first", w.f.Peer(5).Process, func(id string) string { return "/sock." + id })
	w.e.EndRun(exited.ID, audit.ReasonProcessExited) // EndIfNeverStarted's end
	prepareTimeout = time.Millisecond
	expired := w.e.PrepareRun("expired", w.f.Peer(5).Process, func(id string) string { return "/sock." + id })
	for deadline := time.Now().Add(time.Minute); expired.Ended() == ""; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the prepared run did not expire")
		}
	}
	log.mu.Lock()
	for _, ev := range log.events {
		t.Errorf("a run never started recorded %s %s (run %s)", ev.Type, ev.Reason, ev.Run)
	}
	log.mu.Unlock()
	w.e.mu.Lock()
	for _, p := range w.e.past {
		t.Errorf("a run never started is kept among the ended runs: %+v", p)
	}
	w.e.mu.Unlock()
}

// The sessions list carries the command line a run's process says it
// was started with, cut as a card cuts a claim.
func TestSessionsCarryTheCommandARunClaims(t *testing.T) {
	w := newWorld(t)
	w.f.Set(10, 5, 100, w.f.Exe("claude", "the agent program"), append([]string{"claude", "--resume"}, strings.Split(strings.Repeat("a", 5000), "")...)...)
	run := w.launch("coder", 10)
	runs, _ := w.e.Sessions()
	if len(runs) != 1 || runs[0].ID != run.ID || len(runs[0].Argv) < 2 || runs[0].Argv[0] != "claude" || runs[0].Argv[1] != "--resume" {
		t.Fatalf("the sessions list the run as %+v", runs)
	}
	if n := len(strings.Join(runs[0].Argv, "")); n > maxClaim+len(safetext.Cut(strings.Repeat("a", 2*maxClaim), 0)) {
		t.Errorf("a command line of 5002 arguments is listed with %d bytes", n)
	}
}
