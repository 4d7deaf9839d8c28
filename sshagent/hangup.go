package sshagent

import (
	"context"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A request that waits for a person (a card) ends when its client hangs
// up: a killed ssh leaves no card up for nobody, and a run that kills its
// requesters once their cards are up is told apart (the approval engine
// paces such withdrawals). The watch starts only once the decision has
// taken hangupAfter, so that a decision made at once costs a timer, not
// a system call.
const hangupAfter = 20 * time.Millisecond

// whileConnected returns a context that ends when the client closes its
// end of the connection, and stop, which ends the watch and must be
// called before the connection is read again.
func (c *conn) whileConnected() (context.Context, func()) {
	ctx, cancel := context.WithCancel(c.ctx)
	rc, err := c.c.SyscallConn()
	if err != nil {
		return ctx, cancel
	}
	var mu sync.Mutex
	var done chan struct{}
	stopped := false
	watch := func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		done = make(chan struct{})
		go func() {
			defer close(done)
			var b [1]byte
			rc.Read(func(fd uintptr) bool {
				n, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
				if err == unix.EAGAIN {
					return false // nothing yet: wait until readable
				}
				if n == 0 && err == nil {
					cancel() // the client hung up
				}
				return true // a byte of a next request, or an error: no more watching
			})
		}()
	}
	timer := time.AfterFunc(hangupAfter, watch)
	return ctx, func() {
		timer.Stop()
		mu.Lock()
		stopped = true
		w := done
		mu.Unlock()
		if w != nil {
			// A read deadline in the past wakes the watch.
			c.c.SetReadDeadline(time.Unix(1, 0))
			<-w
			c.c.SetReadDeadline(time.Time{})
		}
		cancel()
	}
}
