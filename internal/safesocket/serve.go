package safesocket

import (
	"context"
	"errors"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/postern/postern/internal/procid"
)

// Serve accepts connections on l until ctx is done or l is closed, and
// handles each in its own goroutine, counted in wg. It returns nil when
// stopped, or the error that stopped accepting.
//
// Running out of a resource never stops it: when accept fails with
// EMFILE, ENFILE, ENOBUFS or ENOMEM (or another temporary error), Serve
// calls exhausted (if not nil; it may close an idle connection to free a
// descriptor) and tries again after a pause that doubles from 5ms up to a
// second, as net/http does.
//
// Nor does a client wait for a descriptor that does not come: when
// accept fails for want of one a second time in a row (the idle
// connection exhausted closed did not free one), Serve spends the
// descriptor the process holds in reserve to accept the oldest waiting
// connection and passes it to refuse (if not nil) through Refuse, which
// tells the client the server is out of resources within RefuseTime;
// Serve closes the connection after it, and takes a descriptor back into
// reserve, as it does after each accept and each connection handle
// returns from, whichever first finds one free.
func Serve(ctx context.Context, l *net.UnixListener, wg *sync.WaitGroup, handle func(*net.UnixConn), exhausted func(error), refuse func(*net.UnixConn)) error {
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	spare.fill()
	var pause time.Duration
	short := 0 // accepts failed for want of a descriptor in a row
	for {
		c, err := l.AcceptUnix()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			if !Exhausted(err) {
				return err
			}
			if exhausted != nil {
				exhausted(err)
			}
			if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				short++
			}
			if short > 1 && refuse != nil {
				if c := spare.accept(l); c != nil {
					wg.Add(1)
					go func() {
						defer wg.Done()
						defer spare.fill()
						defer c.Close()
						Refuse(c, refuse)
					}()
				}
			}
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(pause):
			}
			continue
		}
		spare.fill() // if a refusal could not take it back
		pause, short = 0, 0
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Accepted on the last descriptor, the fill above failed: the
			// reserve is taken back once the connection is done with.
			defer spare.fill()
			handle(c)
		}()
	}
}

// Exhausted reports whether err is accept failing for want of a resource
// (descriptors, buffers, memory) or another temporary condition, after
// which accepting again later may succeed.
func Exhausted(err error) bool {
	if procid.Short(err) {
		return true
	}
	for _, e := range []error{syscall.ECONNABORTED, syscall.EINTR, syscall.EAGAIN} {
		if errors.Is(err, e) {
			return true
		}
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
