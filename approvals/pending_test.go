package approvals

import (
	"testing"
	"time"

	"github.com/postern/postern/internal/confine"
)

// A run prepared and never started ends after prepareTimeout, and the
// gateway is told, so that it closes the run's socket; a started run does
// not.
func TestPreparedRunExpires(t *testing.T) {
	defer func(d time.Duration) { prepareTimeout = d }(prepareTimeout)
	w := newWorld(t)
	ended := make(chan *Run, 2)
	w.cfg.OnRunEnd = func(r *Run) { ended <- r }
	w.e = NewEngine(w.cfg)
	// Prepared under the usual timeout, and started: a busy machine that
	// starts it late does not have it expire first.
	started := w.e.PrepareRun("started", w.f.Peer(5).Process, func(id string) string { return "/sock." + id })
	prepareTimeout = 50 * time.Millisecond
	idle := w.e.PrepareRun("only prepared", w.f.Peer(5).Process, func(id string) string { return "/sock." + id })
	if n := w.e.PendingRuns(); n != 2 {
		t.Fatalf("%d pending runs, want 2", n)
	}
	if _, err := w.e.StartRun(started.ID, 10, w.f.Peer(5), confine.Level{}); err != nil {
		t.Fatal(err)
	}
	w.e.expireIfPending(started.ID) // its timer, come now: a started run stays
	select {
	case r := <-ended:
		if r.ID != idle.ID || r.Ended() != "expired" {
			t.Fatalf("ended run %s (%s), want %s expired", r.ID, r.Ended(), idle.ID)
		}
	case <-time.After(time.Minute):
		t.Fatal("the prepared run never ended")
	}
	time.Sleep(2 * prepareTimeout)
	select {
	case r := <-ended:
		t.Fatalf("run %s ended too (%s)", r.ID, r.Ended())
	default:
	}
	if n := w.e.PendingRuns(); n != 0 {
		t.Fatalf("%d pending runs after the expiry", n)
	}
}
