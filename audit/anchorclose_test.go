package audit

import (
	"os"
	"sync"
	"syscall"
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

// A Checkpoint that waits for a checkpoint being written returns the
// failure when that write fails, also when the writer has failed and
// answered every waiter it knew of just before this one was queued: it
// must not wait for an answer that never comes (a gateway that locks or
// stops then hangs).
func TestCheckpointWaitingOnAFailedWriteReturns(t *testing.T) {
	tl := newTestSetup(t)
	tl.cfg.CheckpointEvery = 1 // each entry reserves the checkpoint after it
	l := tl.open(t)
	syncing, release := make(chan struct{}, 1), make(chan struct{})
	l.w.syncHook = func(f *os.File) error {
		syncing <- struct{}{}
		<-release
		return syscall.EIO
	}
	appended := make(chan error, 1)
	go func() { appended <- l.Append(ev(EventSign, "R1")) }()
	<-syncing // the entry and its checkpoint are being written
	reached, proceed := make(chan struct{}), make(chan struct{})
	l.w.waitHook = func() {
		close(reached)
		<-proceed
	}
	checkpointed := make(chan error, 1)
	go func() { checkpointed <- l.Checkpoint() }()
	<-reached
	close(release) // the write fails
	if err := <-appended; err == nil {
		t.Fatal("append on a failing sync succeeded")
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		l.w.cmu.Lock()
		done := !l.w.flushing
		l.w.cmu.Unlock()
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the writer did not stop after the failure")
		}
	}
	close(proceed)
	select {
	case err := <-checkpointed:
		if err == nil {
			t.Fatal("checkpoint over a failed write succeeded")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Checkpoint still waits 5 s after the write it waited for failed")
	}
	l.Close()
}
