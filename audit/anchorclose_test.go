package audit

import (
	"os"
	"sync"
	"testing"
	"time"
)

// Close, and Checkpoint, return only once the checkpoint they waited for
// has been passed to OnCheckpoint, also when another goroutine wrote it:
// a caller that stops taking anchors when Close returns (the gateway
// closes its anchor keeper) must not be handed one later, and must not
// miss the anchor of the final checkpoint.
func TestCloseReturnsAfterItsCheckpointIsAnchored(t *testing.T) {
	tl := newTestSetup(t)
	var mu sync.Mutex
	var anchors []Anchor
	tl.cfg.OnCheckpoint = func(a Anchor) {
		time.Sleep(100 * time.Millisecond)
		mu.Lock()
		anchors = append(anchors, a)
		mu.Unlock()
	}
	l := tl.open(t)
	syncing, release := make(chan struct{}, 16), make(chan struct{}, 16)
	l.w.syncHook = func(f *os.File) error {
		syncing <- struct{}{}
		<-release
		return datasync(f)
	}
	first := make(chan error, 1)
	go func() { first <- l.Append(ev(EventSign, "R1")) }()
	<-syncing // the first record's batch is being made durable
	p := l.Start(ev(EventSign, "R2"))
	waitPending(t, l, 1)
	release <- struct{}{} // the lead goes to a goroutine of the writer's
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	<-syncing // the second record's batch is being made durable
	closed := make(chan error, 1)
	go func() { closed <- l.Close() }()
	waitPending(t, l, 1) // the final checkpoint waits for its turn
	close(release)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := append([]Anchor(nil), anchors...)
	mu.Unlock()
	r := tl.verify(t)
	if !r.OK || r.LastCheckpoint == nil {
		t.Fatalf("after close: %s", describe(r))
	}
	if len(got) == 0 || got[len(got)-1].Seq != r.LastCheckpoint.Seq {
		t.Fatalf("Close returned before the final checkpoint (seq %d) was passed to OnCheckpoint; anchors then: %+v", r.LastCheckpoint.Seq, got)
	}
}

// waitPending waits until n records wait for their turn.
func waitPending(t *testing.T, l *Log, n int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; {
		l.w.cmu.Lock()
		k := len(l.w.pending)
		l.w.cmu.Unlock()
		if k == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d records wait, want %d", k, n)
		}
		time.Sleep(time.Millisecond)
	}
}
