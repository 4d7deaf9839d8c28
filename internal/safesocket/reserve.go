package safesocket

import (
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// spare is the descriptor the process holds in reserve, one for all the
// sockets it serves: when accept fails for want of a descriptor, closing
// it lets one connection in, to be told why it cannot be served, instead
// of waiting in the listen queue for as long as its client waits.
var spare reserve

// A reserve holds one descriptor (of /dev/null) to give up when the
// process has no other.
type reserve struct {
	held atomic.Bool // f != nil, read without the lock
	mu   sync.Mutex
	f    *os.File // nil while spent, or when none could be opened
}

// fill takes a descriptor into reserve if none is held. Failing (the
// process is still out of descriptors) leaves it empty until the next
// fill. Filled, it costs a load.
func (r *reserve) fill() {
	if r.held.Load() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		r.f, _ = os.Open(os.DevNull)
		r.held.Store(r.f != nil)
	}
}

// accept spends the reserve descriptor on accepting the connection
// waiting on l, and returns it; nil when the reserve is spent (another
// socket refuses a client with it) or no connection was waiting after
// all. The reserve is taken back by fill, once the connection is closed.
func (r *reserve) accept(l *net.UnixListener) *net.UnixConn {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return nil
	}
	r.f.Close()
	r.f = nil
	r.held.Store(false)
	// The client that was waiting may have given up: accept waits no
	// longer than it takes to find another.
	l.SetDeadline(time.Now().Add(10 * time.Millisecond))
	c, err := l.AcceptUnix()
	l.SetDeadline(time.Time{})
	if err != nil {
		r.f, _ = os.Open(os.DevNull)
		r.held.Store(r.f != nil)
		return nil
	}
	return c
}
