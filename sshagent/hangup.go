package sshagent

import (
	"context"
	"sync"
	"time"
)

// A request that waits for a person (a card) ends when its client hangs
// up, or when the process that asked is gone: it exited (a child of its
// may keep the connection open), or it runs another program (an exec
// keeps the pid and the connection). Nothing is signed for a requester
// that is gone, so its card would wait for nobody: a killed ssh leaves no
// card up, and a run that does away with its requesters once their cards
// are up is told apart (the approval engine paces such withdrawals). See
// procid's Peer.WatchGone.
//
// The watch begins only when something first waits on the request's
// context (its Done): a decision made at once waits on nothing and costs
// neither a goroutine, nor a system call, nor a timer (whose arming wakes
// the Go runtime's poller thread, a context switch per signature).

// whileConnected returns a context that ends when the client closes its
// end of the connection, and stop, which ends the watch and must be
// called before the connection is read again.
func (c *conn) whileConnected() (context.Context, func()) {
	h := &hangup{Context: c.ctx, c: c}
	return h, h.stop
}

// hangup is a request's context (see whileConnected): the server's
// context, and the watch of the client's end once Done was called. Its
// cause (context.Cause) says when the requester ended the wait by
// running another program: an error wrapping procid.ErrChanged.
type hangup struct {
	context.Context // the server's: Deadline, and Value and Err until watched
	c               *conn

	mu       sync.Mutex
	watched  context.Context // nil until the first Done
	cancel   context.CancelCauseFunc
	ended    chan struct{} // closed when the watch's goroutine returns
	stopGone func()        // ends the watch of the requester; nil until watched
	stopped  bool
}

// Done starts the watch, once, and returns the channel that is closed
// when the client hangs up or the server's context ends.
func (h *hangup) Done() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.watched == nil {
		h.watched, h.cancel = context.WithCancelCause(h.Context)
		if h.stopped {
			h.cancel(nil) // asked after the request was decided
		} else {
			h.watch()
		}
	}
	return h.watched.Done()
}

func (h *hangup) Err() error {
	h.mu.Lock()
	w := h.watched
	h.mu.Unlock()
	if w == nil {
		return h.Context.Err()
	}
	return w.Err()
}

// Value is the server context's, and once watched the watch's, so that
// context.Cause finds the watch's cause.
func (h *hangup) Value(key any) any {
	h.mu.Lock()
	w := h.watched
	h.mu.Unlock()
	if w == nil {
		return h.Context.Value(key)
	}
	return w.Value(key)
}

// endState is what clientEnd found at the client's end of a connection.
type endState int

const (
	endOpen    endState = iota // connected: watch on
	endClosed                  // the client hung up
	endUnknown                 // it cannot be told (an error): watch no more
)

// watch waits, in a goroutine of its own, until the client hangs up (it
// cancels then), whenever the connection has news: bytes of a next
// request are left where they are, for the next read. It also watches
// the requester. h.mu held.
func (h *hangup) watch() {
	h.stopGone = h.c.peer.WatchGone(h.cancel)
	rc, err := h.c.c.SyscallConn()
	if err != nil {
		return
	}
	h.ended = make(chan struct{})
	cancel := h.cancel
	go func() {
		defer close(h.ended)
		rc.Read(func(fd uintptr) bool {
			switch clientEnd(int(fd)) {
			case endOpen:
				return false // wait until there is news
			case endClosed:
				cancel(nil)
			}
			return true
		})
	}()
}

// stop ends the watch, if it began, before the connection is read again.
func (h *hangup) stop() {
	h.mu.Lock()
	h.stopped = true
	ended, cancel, stopGone := h.ended, h.cancel, h.stopGone
	h.mu.Unlock()
	if stopGone != nil {
		stopGone()
	}
	if ended != nil {
		// A read deadline in the past wakes the watch.
		h.c.c.SetReadDeadline(time.Unix(1, 0))
		<-ended
		h.c.c.SetReadDeadline(time.Time{})
	}
	if cancel != nil {
		cancel(nil)
	}
}
