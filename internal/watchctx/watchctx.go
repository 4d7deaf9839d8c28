// Package watchctx makes a context whose watch begins only when something
// first waits on it.
//
// A request that may wait for a person (a card) must end when its
// requester goes: its client hangs up, its process exits or runs another
// program. Watching for that costs a goroutine, a duplicated descriptor
// and a timer, whose arming wakes the Go runtime's poller thread. Most
// requests are decided at once (a grant covers them) and never wait on
// their context: for them the watch would be pure cost.
//
// New returns a context that behaves as its parent until its Done is
// first called; then it starts the watch, which may cancel the context
// with a cause (context.Cause finds it). Stop ends the watch, if it
// began, and the context with it: call it once the request is decided.
//
//	ctx, stop := watchctx.New(parent, peer.WatchGone)
//	defer stop()
//	decision := decider.Decide(ctx, req)
package watchctx

import (
	"context"
	"sync"
)

// A Start begins a watch that calls cancel when what it watches ends,
// and returns the function that ends the watch. cancel may be called
// from any goroutine, more than once.
type Start func(cancel func(cause error)) (stop func())

// New returns a context that starts watch at its first Done, and the
// function that ends the watch (if it began) and the context.
func New(parent context.Context, watch Start) (context.Context, func()) {
	c := &lazy{Context: parent, start: watch}
	return c, c.stop
}

// lazy is New's context: the parent's, and once Done was called the
// watched one, which the watch cancels.
type lazy struct {
	context.Context // the parent: Deadline, and Err and Value until watched
	start           Start

	mu        sync.Mutex
	watched   context.Context // nil until the first Done
	cancel    context.CancelCauseFunc
	stopWatch func() // nil until the watch began
	stopped   bool
}

// Done starts the watch, once, and returns the channel that is closed
// when the watch cancels, the parent ends or stop is called.
func (c *lazy) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.watched == nil {
		c.watched, c.cancel = context.WithCancelCause(c.Context)
		if c.stopped {
			c.cancel(nil) // asked after the request was decided
		} else {
			c.stopWatch = c.start(c.cancel)
		}
	}
	return c.watched.Done()
}

func (c *lazy) Err() error {
	if w := c.current(); w != nil {
		return w.Err()
	}
	return c.Context.Err()
}

// Value is the parent's, and once watched the watched context's, so that
// context.Cause finds the watch's cause.
func (c *lazy) Value(key any) any {
	if w := c.current(); w != nil {
		return w.Value(key)
	}
	return c.Context.Value(key)
}

func (c *lazy) current() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.watched
}

// stop ends the watch, if it began, then the context.
func (c *lazy) stop() {
	c.mu.Lock()
	c.stopped = true
	stopWatch, cancel := c.stopWatch, c.cancel
	c.mu.Unlock()
	if stopWatch != nil {
		stopWatch()
	}
	if cancel != nil {
		cancel(nil)
	}
}
