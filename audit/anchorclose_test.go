package audit

import (
	"bytes"
	"errors"
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

// Open holds the log to the anchors it is given: a log that ends before
// one, or holds another record where one names a record, is refused and
// left as it was, although it has a torn tail to clear and unsealed
// entries to seal; an anchor of another log says nothing about it.
func TestOpenRefusesALogThatEndsBeforeAnAnchor(t *testing.T) {
	tl := newTestSetup(t)
	var anchors []Anchor
	tl.cfg.OnCheckpoint = func(a Anchor) { anchors = append(anchors, a) }
	l := tl.open(t)
	mustAppend(t, l, ev(EventSign, "R1"))
	older := tl.bytes(t)
	olderKey, err := os.ReadFile(tl.cfg.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, ev(EventSign, "R2"))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	last := anchors[len(anchors)-1]
	full, err := os.ReadFile(tl.path)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, len(full))
	copy(b, older)
	copy(b[len(older):], []byte{0, 0, 1, 0, 0xff, 0xff, 0xfe, 0xff, 2}) // a torn record
	tl.cfg.OnCheckpoint = nil
	if err := os.WriteFile(tl.cfg.KeyFile, olderKey, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, a := range map[string]Anchor{
		"past the end":   last,
		"another record": {LogID: last.LogID, Seq: anchors[0].Seq, Link: last.Link},
	} {
		if err := os.WriteFile(tl.path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		cfg := tl.cfg
		cfg.Anchors = []Anchor{a}
		if l, err := Open(cfg); !errors.Is(err, ErrDamaged) || !errors.Is(err, ErrBehindAnchor) {
			if err == nil {
				l.Close()
			}
			t.Fatalf("%s: open: %v", name, err)
		}
		if now, _ := os.ReadFile(tl.path); !bytes.Equal(now, b) {
			t.Fatalf("%s: the refused log was changed", name)
		}
	}
	cfg := tl.cfg
	cfg.Anchors = []Anchor{{LogID: "00112233445566778899aabbccddeeff", Seq: 1000, Link: last.Link}}
	l, err = Open(cfg)
	if err != nil {
		t.Fatalf("open with an anchor of another log: %v", err)
	}
	l.Close()
}
