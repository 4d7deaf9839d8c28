package gateway

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"time"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/procid"
	"github.com/postern/postern/internal/safesocket"
	"github.com/postern/postern/sshagent"
)

// servers are the goroutines that serve the gateway's sockets. The first
// that fails stops them all, and its error is the gateway's.
type servers struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	errc   chan error // the first failure
}

func newServers(ctx context.Context) *servers {
	s := &servers{errc: make(chan error, 1)}
	s.ctx, s.cancel = context.WithCancel(ctx)
	return s
}

// serve runs f in a goroutine of its own.
func (s *servers) serve(f func() error) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := f(); err != nil {
			select {
			case s.errc <- err:
			default:
			}
			s.cancel()
		}
	}()
}

// stop stops every server and waits for them.
func (s *servers) stop() {
	s.cancel()
	s.wg.Wait()
}

// err returns the first failure, if any.
func (s *servers) err() error {
	select {
	case err := <-s.errc:
		return err
	default:
		return nil
	}
}

// stopWait bounds how long a stopping gateway waits for the connections
// it cut to be done with (their handlers to return): a handler stuck in
// something that ignores the cut does not keep the gateway from exiting.
const stopWait = 5 * time.Second

// waitAtMost calls wait and reports whether it returned within d.
func waitAtMost(d time.Duration, wait func()) bool {
	done := make(chan struct{})
	go func() { wait(); close(done) }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// listenIdentified listens on an agent socket, whose clients are
// identified by their credentials.
func listenIdentified(path string) (*net.UnixListener, error) {
	l, err := safesocket.Listen(path)
	if err != nil {
		return nil, err
	}
	return identified(l)
}

// identified makes the clients of l send their credentials.
func identified(l *net.UnixListener) (*net.UnixListener, error) {
	if err := procid.PassCredentials(l); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// serveSockets listens on the agent socket (or takes the one a service
// manager made) and the control socket beside it, and serves the agent
// socket; the control socket is served by serveControl once the gateway
// is up (until then its clients wait, and never hear of a bastion that is
// still starting as not enabled).
func (g *Gateway) serveSockets() error {
	var l *net.UnixListener
	var err error
	if g.opts.Listener != nil {
		if ok, _ := procid.PassingCredentials(g.opts.Listener); !ok {
			g.log.Warn("the activated socket does not pass credentials (PassCredentials=yes in the socket unit): a request sent before the agent started is refused", "socket", g.opts.Socket)
		}
		l, err = identified(g.opts.Listener)
	} else {
		l, err = listenIdentified(g.opts.Socket)
	}
	if err != nil {
		return fmt.Errorf("agent socket: %w", err)
	}
	g.agentL = l
	if err := safesocket.CheckDir(filepath.Dir(g.opts.Socket)); err != nil {
		g.log.Warn(err.Error())
	}
	if g.ctlL, err = safesocket.Listen(api.ControlSocket(g.opts.Socket)); err != nil {
		return fmt.Errorf("control socket: %w", err)
	}
	g.srv.serve(func() error {
		return g.agent.Serve(g.srv.ctx, g.agentL, &sshagent.Endpoint{Channel: approvals.Channel{Kind: approvals.ChannelAgent}})
	})
	return nil
}

// serveControl serves the control socket serveSockets listens on.
func (g *Gateway) serveControl() {
	g.srv.serve(func() error {
		return g.agent.ServeOwn(g.ctlL, func() error { return g.ctl.Serve(g.srv.ctx, g.ctlL) })
	})
}

// closeListeners closes every socket the gateway listens on.
func (g *Gateway) closeListeners() {
	for _, l := range []*net.UnixListener{g.agentL, g.ctlL, g.bastionL} {
		if l != nil {
			l.Close()
		}
	}
	g.runMu.Lock()
	for _, l := range g.runLs {
		l.Close()
	}
	g.runMu.Unlock()
}
