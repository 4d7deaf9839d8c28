package watchctx

import (
	"context"
	"errors"
	"testing"
	"time"
)

// counter is a watch that records when it starts and stops, and hands
// out its cancel.
type counter struct {
	started, stopped int
	cancel           func(error)
}

func (w *counter) start(cancel func(error)) func() {
	w.started++
	w.cancel = cancel
	return func() { w.stopped++ }
}

// A context nobody waits on starts no watch, and behaves as its parent.
func TestNoWatchUntilDone(t *testing.T) {
	type key struct{}
	parent, cancelParent := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	var w counter
	ctx, stop := New(parent, w.start)
	if ctx.Err() != nil || ctx.Value(key{}) != "v" {
		t.Fatalf("unwatched: err %v, value %v", ctx.Err(), ctx.Value(key{}))
	}
	cancelParent()
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Fatalf("unwatched, parent ended: err %v", ctx.Err())
	}
	stop()
	if w.started != 0 || w.stopped != 0 {
		t.Fatalf("a context nobody waited on started %d watches, stopped %d", w.started, w.stopped)
	}
}

// The first Done starts the watch, once; its cancel ends the context
// with its cause; stop ends the watch.
func TestWatchStartsAtDoneAndCancelsWithCause(t *testing.T) {
	var w counter
	ctx, stop := New(context.Background(), w.start)
	done := ctx.Done()
	ctx.Done()
	if w.started != 1 {
		t.Fatalf("two Done started %d watches, want 1", w.started)
	}
	select {
	case <-done:
		t.Fatal("ended before the watch cancelled")
	default:
	}
	why := errors.New("the requester ran another program")
	w.cancel(why)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the watch's cancel did not end the context")
	}
	if !errors.Is(ctx.Err(), context.Canceled) || context.Cause(ctx) != why {
		t.Fatalf("err %v, cause %v, want the watch's cause", ctx.Err(), context.Cause(ctx))
	}
	stop()
	if w.stopped != 1 {
		t.Fatalf("stop stopped %d watches, want 1", w.stopped)
	}
}

// Stop ends a watched context (a plain cancel), and a Done asked after
// stop starts nothing and is closed at once.
func TestStop(t *testing.T) {
	var w counter
	ctx, stop := New(context.Background(), w.start)
	<-func() <-chan struct{} { stop(); return ctx.Done() }()
	if w.started != 0 || context.Cause(ctx) != context.Canceled {
		t.Fatalf("Done after stop: %d watches started, cause %v", w.started, context.Cause(ctx))
	}

	ctx, stop = New(context.Background(), w.start)
	done := ctx.Done()
	stop()
	<-done
	if w.started != 1 || w.stopped != 1 || context.Cause(ctx) != context.Canceled {
		t.Fatalf("stop of a watched context: started %d, stopped %d, cause %v", w.started, w.stopped, context.Cause(ctx))
	}
}

// A parent that ends ends the watched context too, and a context derived
// from it, which waits on Done, starts the watch.
func TestParentAndChildren(t *testing.T) {
	var w counter
	parent, cancelParent := context.WithCancel(context.Background())
	ctx, stop := New(parent, w.start)
	defer stop()
	child, cancelChild := context.WithCancel(ctx)
	defer cancelChild()
	if w.started != 1 {
		t.Fatalf("a derived context started %d watches, want 1", w.started)
	}
	cancelParent()
	select {
	case <-child.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the parent's end did not reach a derived context")
	}
}
