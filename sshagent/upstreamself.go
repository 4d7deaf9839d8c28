package sshagent

import (
	"net"
	"sync"
)

// The agent never takes itself for its upstream agent. An upstream
// socket that leads back to one of the agent's own (a symbolic or hard
// link put where the upstream was, one of the agent's sockets renamed)
// would have the agent ask itself, and that connection itself again,
// until the user's connections ran out, the idle ones pushed out first.
// A connection to the upstream whose other end is bound where the agent
// listens, or where the process serves another socket of its own (the
// gateway's control socket, its bastion's: neither answers an agent
// request, and each listing would wait for the upstream's time to run
// out), is closed before anything is sent on it. (A program that
// relays between the two is another agent: the loop it makes is bounded
// by the connection limits, as any client's flood is.)

// ownSockets are the addresses the agent listens on, as its listeners
// were bound: what a connection to one of them finds at its other end.
type ownSockets struct {
	mu    sync.Mutex
	addrs map[string]int // how many listeners are bound there
}

func (o *ownSockets) add(a net.Addr) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.addrs == nil {
		o.addrs = map[string]int{}
	}
	o.addrs[a.String()]++
}

func (o *ownSockets) remove(a net.Addr) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.addrs[a.String()]--; o.addrs[a.String()] <= 0 {
		delete(o.addrs, a.String())
	}
}

// has reports whether a, the other end of a connection, is one of the
// agent's own sockets.
func (o *ownSockets) has(a net.Addr) bool {
	if a == nil || a.String() == "" {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.addrs[a.String()] > 0
}

// ServeOwn runs serve, which serves l, another socket of the process
// than the agent's, and takes l's address for one of the agent's own
// until serve returns: never the upstream agent.
func (s *Server) ServeOwn(l net.Listener, serve func() error) error {
	s.own.add(l.Addr())
	defer s.own.remove(l.Addr())
	return serve()
}
