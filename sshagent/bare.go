package sshagent

import (
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/postern/postern/internal/procid"
)

// A connection parked for bareAfter gives up its net.Conn and keeps only
// a descriptor of its socket (a duplicate; the net.Conn's own is closed):
// the Go runtime's poller entry for the socket (512 bytes), the net.Conn,
// its addresses and the reader over it go, about half of what an idle
// connection costs. When its next request comes, it takes a net.Conn
// again before it is read. A client that sends its requests in a row, or
// within bareAfter of each other, never meets a bare connection.
const bareAfter = 100 * time.Millisecond

// At most maxDressed parked connections keep their net.Conn: past that,
// the ones parked first go bare at once. Many clients that connect at
// once then never hold many net.Conns (nor the runtime's poller entries,
// which it keeps for reuse once made) at the same time.
const maxDressed = 64

// barerClock is what conn.parkedAt counts from (monotonic time).
var barerClock = time.Now()

// barer makes the connections parked for bareAfter bare.
type barer struct {
	after time.Duration // bareAfter; tests set another
	mu    sync.Mutex
	queue []*conn // parked, or about to be, with their net.Conn when queued; each once (conn.queued); one may go bare while queued (makeBare)
	timer *time.Timer
	soon  bool         // the timer was set to sweep at once
	n     atomic.Int64 // bare connections
}

// parking notes that cn is about to be parked with its net.Conn.
func (b *barer) parking(cn *conn) {
	b.mu.Lock()
	defer b.mu.Unlock()
	cn.parkedAt = time.Since(barerClock)
	if !cn.queued {
		cn.queued = true
		b.queue = append(b.queue, cn)
	}
	switch {
	case b.timer == nil:
		b.timer = time.AfterFunc(b.idle(), b.sweep)
	case len(b.queue) > maxDressed && !b.soon:
		b.soon = true
		b.timer.Reset(0)
	}
}

// idle is how long a connection stays parked before it goes bare.
func (b *barer) idle() time.Duration {
	if b.after == 0 {
		return bareAfter
	}
	return b.after
}

// sweep makes bare the connections parked for bareAfter, and the first
// parked past maxDressed, and looks again later while others wait.
func (b *barer) sweep() {
	b.mu.Lock()
	b.soon = false
	now := time.Since(barerClock)
	var due []*conn
	excess := len(b.queue) - maxDressed
	keep := b.queue[:0]
	for i, cn := range b.queue {
		if i < excess || now-cn.parkedAt >= b.idle() {
			cn.queued = false
			due = append(due, cn)
		} else {
			keep = append(keep, cn)
		}
	}
	clear(b.queue[len(keep):])
	b.queue = keep
	if len(keep) > 0 {
		b.timer.Reset(b.idle())
	} else {
		b.timer = nil
	}
	b.mu.Unlock()
	for _, cn := range due {
		cn.makeBare()
	}
}

// makeBare takes cn out of the Lot, if it is still parked since it was
// noted, gives up its net.Conn, and parks its bare descriptor.
func (cn *conn) makeBare() {
	if !cn.spot.Leave() {
		return // woken meanwhile, or ended: its goroutine has it
	}
	// The connection is this goroutine's until it is parked again. Its
	// link to the upstream agent goes too (a new one gets its session
	// bindings again when a request needs it): idle clients do not hold
	// the upstream's connections.
	cn.closeUpstream()
	// Bare already when a sweep took it off the queue, woken and
	// parked again (queued once more) before that sweep made it bare:
	// it has no net.Conn to give up.
	if !cn.isBare() {
		cn.giveUpConn()
	}
	if cn.slot != nil && cn.slot.Evicted() {
		cn.end()
		return
	}
	if !cn.spot.Park() {
		go cn.serve()
	}
}

// giveUpConn replaces cn's net.Conn with a duplicate of its socket's
// descriptor; when none can be made, cn keeps its net.Conn.
func (cn *conn) giveUpConn() {
	fd, err := dupSocket(cn.c)
	if err != nil {
		return
	}
	cn.mu.Lock()
	c := cn.c
	cn.c, cn.sc, cn.fd, cn.bare = nil, nil, fd, true
	cn.mu.Unlock()
	c.Close() // the socket stays open through fd
	cn.spot.Bare(fd)
	cn.srv.bare.n.Add(1)
}

func (cn *conn) isBare() bool {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return cn.bare
}

// dupSocket returns a new descriptor of c's socket (close-on-exec).
func dupSocket(c *net.UnixConn) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd, derr := -1, error(nil)
	if err := raw.Control(func(s uintptr) { fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return -1, err
	}
	return fd, derr
}

// attach gives a bare connection a net.Conn again, and reports whether
// it could; when it could not, the caller ends the connection.
func (cn *conn) attach() bool {
	f := os.NewFile(uintptr(cn.fd), "agent")
	nc, err := net.FileConn(f) // a new descriptor of the socket
	uc, ok := nc.(*net.UnixConn)
	if err == nil && !ok {
		nc.Close()
		err = errors.New("not a unix socket")
	}
	cn.mu.Lock()
	if err == nil {
		cn.c, cn.sc = uc, procid.NewSenderConn(uc)
	}
	cn.fd, cn.bare = -1, false
	cn.mu.Unlock()
	cn.srv.bare.n.Add(-1)
	f.Close()
	if err != nil {
		cn.log.Warn("closing connection: its socket cannot be read again", "err", err)
		return false
	}
	if err := cn.spot.Conn(uc); err != nil {
		cn.log.Warn("closing connection: it cannot be parked again", "err", err)
		return false
	}
	return true
}
