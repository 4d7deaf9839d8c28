package sshagent

import (
	"context"
	"time"

	"github.com/postern/postern/internal/watchctx"
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
// the Go runtime's poller thread, a context switch per signature): see
// package watchctx.

// whileConnected returns a context that ends when the client closes its
// end of the connection or the requester exits or runs another program,
// and stop, which ends the watch and must be called before the
// connection is read again. Its cause (context.Cause) says when the
// requester ended the wait by running another program: an error wrapping
// procid.ErrChanged.
func (c *conn) whileConnected() (context.Context, func()) {
	return watchctx.New(c.ctx, c.watchEnd)
}

// endState is what clientEnd found at the client's end of a connection.
type endState int

const (
	endOpen    endState = iota // connected: watch on
	endClosed                  // the client hung up
	endUnknown                 // it cannot be told (an error): watch no more
)

// watchEnd waits, in a goroutine of its own, until the client hangs up
// (it cancels then), whenever the connection has news: bytes of a next
// request are left where they are, for the next read. It also watches
// the requester. It returns the function that ends both watches.
func (c *conn) watchEnd(cancel func(error)) (stop func()) {
	stopGone := c.peer.WatchGone(cancel)
	rc, err := c.c.SyscallConn()
	if err != nil {
		return stopGone
	}
	ended := make(chan struct{})
	go func() {
		defer close(ended)
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
	return func() {
		stopGone()
		// A read deadline in the past wakes the watch.
		c.c.SetReadDeadline(time.Unix(1, 0))
		<-ended
		c.c.SetReadDeadline(time.Time{})
	}
}
