package gateway

import (
	"sync"
	"syscall"
	"time"

	"github.com/postern/postern/internal/connlimit"
)

// Bounds on what one user's connections may hold, per kind of socket
// (see package connlimit: at a bound, the connection idle the longest
// makes room). Agent connections are many and long-lived (every ssh
// session keeps one); control connections are short, but for "postern
// approve" and "postern journal follow"; bastion connections are SSH
// sessions. A connection holds its socket; its process is pinned by four
// descriptors more, shared by all of that process's connections
// (procid). Many processes' connections can therefore run the gateway
// out of descriptors before a bound is reached: accept then sheds idle
// connections (exhausted).
const (
	maxAgentConnsPerUID   = 16384
	maxControlConnsPerUID = 256
	maxBastionConnsPerUID = 1024
	fdsPerConn            = 1
)

// shedIdleAfter is how long a connection must have been idle before the
// gateway, out of descriptors, sheds it (exhausted), or closes it to
// make room for another of its user's at the user's bound: one admitted
// or answered a moment ago is its client's, sending a request, which a
// closed connection would fail with a broken pipe. Connections that only
// sit (a flood, clients gone quiet) are shed once they have sat that
// long; meanwhile new clients are refused, with the reason.
const shedIdleAfter = time.Second

// limits are the gateway's connection bounds.
type limits struct {
	agent, control, bastion *connlimit.Limiter

	mu       sync.Mutex
	lastWarn time.Time
}

// newLimits bounds the connections so that, together, they fit in the
// descriptor limit: a quarter of it (at most 512 descriptors) is kept for
// everything else, and of the rest agent connections may take three
// quarters, control and bastion connections an eighth each.
func newLimits() *limits {
	conns := maxAgentConnsPerUID * 2
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err == nil && rl.Cur < 1<<30 {
		n := int(rl.Cur)
		conns = (n - min(512, n/4)) / fdsPerConn
	}
	bound := func(most, share int) *connlimit.Limiter {
		return &connlimit.Limiter{PerUID: max(min(most, share), 1), KeepIdle: shedIdleAfter}
	}
	return &limits{
		agent:   bound(maxAgentConnsPerUID, conns*3/4),
		control: bound(maxControlConnsPerUID, conns/8),
		bastion: bound(maxBastionConnsPerUID, conns/8),
	}
}

// exhausted is what a socket does when accept fails for want of
// descriptors or memory: it says so (at most every ten seconds), and
// sheds the connection idle the longest, so that a new client can get
// in (one idle at least shedIdleAfter). The gateway never exits for it.
func (g *Gateway) exhausted(err error) {
	l := g.limits
	shed := connlimit.EvictOldestIdle(shedIdleAfter, l.agent, l.control, l.bastion)
	l.mu.Lock()
	defer l.mu.Unlock()
	if time.Since(l.lastWarn) < 10*time.Second {
		return
	}
	l.lastWarn = time.Now()
	g.log.Warn("cannot accept a connection; pausing, and closing the connection idle the longest", "err", err, "closed_one", shed,
		"agent_connections", l.agent.Total(), "control_connections", l.control.Total(), "bastion_connections", l.bastion.Total())
}
