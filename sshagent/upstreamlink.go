package sshagent

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/internal/procid"
)

// The connections to the upstream agent: a client's own while it is
// bound to a session (session-bind), otherwise taken from a small pool
// and put back; each call bounded by a deadline, a link that fails
// closed. A client that stays idle (a bare connection, bare.go) gives its
// link up, so that idle clients cannot use up the upstream's connections.

// maxIdleLinks bounds the unbound upstream connections kept.
const maxIdleLinks = 4

type linkPool struct {
	mu    sync.Mutex
	links []*upstreamLink
}

func (p *linkPool) get() *upstreamLink {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.links)
	if n == 0 {
		return nil
	}
	u := p.links[n-1]
	p.links = p.links[:n-1]
	return u
}

// put keeps u, unless enough are kept.
func (p *linkPool) put(u *upstreamLink) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.links) >= maxIdleLinks {
		return false
	}
	p.links = append(p.links, u)
	return true
}

// upstreamTimeout bounds an exchange with the upstream agent that waits
// for nobody: a listing, an add, a removal, a session-bind.
const upstreamTimeout = 10 * time.Second

// maxUpstreamKeys bounds the identities taken from the upstream agent.
const maxUpstreamKeys = 1024

// upstreamLink is one client connection's connection to the upstream
// agent, used by that client's requests one at a time.
type upstreamLink struct {
	framed
	bound  bool // a session-bind was sent on it: it is its client's only
	reused bool // kept from an earlier client
}

// call sends one request and reads the reply, waiting until deadline.
func (u *upstreamLink) call(msg []byte, deadline time.Time) ([]byte, error) {
	if err := u.sendBy(msg, deadline); err != nil {
		return nil, err
	}
	return u.recv(deadline)
}

// bind sends a session-bind the agent verified to the upstream agent.
func (u *upstreamLink) bind(contents []byte) error {
	msg := append([]byte{msgExtension}, ssh.Marshal(extensionMsg{Name: ExtSessionBind, Contents: contents})...)
	resp, err := u.call(msg, time.Now().Add(upstreamTimeout))
	switch {
	case err != nil:
		return err
	case len(resp) == 0 || resp[0] != msgSuccess:
		return errRefusedUpstream
	}
	return nil
}

var errRefusedUpstream = errors.New("the upstream agent refused")

// upstream returns the connection's link to the upstream agent, opening
// it and sending it the connection's session bindings when needed.
func (c *conn) upstream() (*upstreamLink, error) {
	if c.up != nil {
		return c.up, nil
	}
	if len(c.binds.list) == 0 {
		if u := c.srv.Upstream.idle.get(); u != nil {
			u.reused = true
			c.up = u
			return u, nil
		}
	}
	d := net.Dialer{Timeout: upstreamTimeout}
	nc, err := d.DialContext(c.ctx, "unix", c.srv.Upstream.Socket)
	if err != nil {
		return nil, err
	}
	if err := c.notUpstream(nc); err != nil {
		nc.Close()
		return nil, err
	}
	c.up = &upstreamLink{framed: newFramed(nc)}
	for _, b := range c.binds.list {
		if err := c.bindUpstream(b.raw); err != nil {
			return nil, err
		}
		if c.up == nil {
			// Closed by bindUpstream: the gateway stopped using the
			// upstream meanwhile.
			return nil, errUpstreamStopped
		}
	}
	return c.up, nil
}

// notUpstream says why nc, just connected to the upstream socket, does
// not lead to the user's upstream agent: it leads back to one of this
// agent's own sockets, or to a process of another user (one that made
// its socket first at a path others can write), which is to see
// neither the user's logins nor what the user signs, and whose keys are
// not the user's to use. Root's is the user's, as for ssh-agent.
func (c *conn) notUpstream(nc net.Conn) error {
	if c.srv.own.has(nc.RemoteAddr()) {
		return fmt.Errorf("it leads back to this agent's own socket %s", nc.RemoteAddr())
	}
	uc, ok := nc.(*net.UnixConn)
	if !ok {
		return errors.New("not a unix socket")
	}
	cred, err := procid.PeerCred(uc)
	if err != nil {
		return err
	}
	if !procid.OwnOrRoot(cred.UID) {
		return fmt.Errorf("the agent listening there runs as another user (uid %d, pid %d)", cred.UID, cred.PID)
	}
	return nil
}

// bindUpstream sends a verified session-bind on the link, when it is
// open. An upstream that refuses it (one that does not know the
// extension, such as gpg-agent) goes on without it; a broken link is
// closed, and so is one to an upstream no longer in use, which is not to
// see the client's logins.
func (c *conn) bindUpstream(contents []byte) error {
	if c.up == nil {
		return nil
	}
	if !c.srv.Upstream.inUse() {
		c.dropUpstream()
		return nil
	}
	c.up.bound = true
	err := c.up.bind(contents)
	if errors.Is(err, errRefusedUpstream) {
		c.log.Info("the upstream agent refused a session-bind; it goes on without it")
		return nil
	}
	if err != nil {
		c.dropUpstream()
		return fmt.Errorf("upstream agent %s: %w", c.srv.Upstream.Socket, err)
	}
	return nil
}

// upstreamCall sends one request to the upstream agent and reads the
// reply, waiting at most wait.
func (c *conn) upstreamCall(msg []byte, wait time.Duration) ([]byte, error) {
	u, err := c.upstreamSend(msg, wait)
	if err != nil {
		return nil, err
	}
	return c.upstreamReply(u, msg, wait)
}

// upstreamSend sends one request to the upstream agent, on the link it
// returns, waiting at most wait for the upstream to take it in. A link
// that fails is closed; the next request opens a new one. A kept link
// that the upstream closed while it waited is replaced, and the request
// sent on the new one.
func (c *conn) upstreamSend(msg []byte, wait time.Duration) (*upstreamLink, error) {
	for {
		u, err := c.upstream()
		if err == nil {
			if err = u.sendBy(msg, time.Now().Add(wait)); err == nil {
				return u, nil
			}
			c.dropUpstream()
			if closedWhileKept(u, err) {
				continue
			}
		}
		return nil, c.upstreamErr(err, wait)
	}
}

// upstreamReply reads the reply to msg, sent on u, waiting at most wait.
// When u was kept and the upstream closed it before answering (the
// request got no byte back), msg is sent again on a new link.
func (c *conn) upstreamReply(u *upstreamLink, msg []byte, wait time.Duration) ([]byte, error) {
	for {
		resp, err := u.recv(time.Now().Add(wait))
		if err == nil {
			return resp, nil
		}
		c.dropUpstream()
		if !closedWhileKept(u, err) {
			return nil, c.upstreamErr(err, wait)
		}
		if u, err = c.upstreamSend(msg, wait); err != nil {
			return nil, err
		}
	}
}

// closedWhileKept reports whether err is a kept link found closed by the
// upstream.
func closedWhileKept(u *upstreamLink, err error) bool {
	return u.reused && (errors.Is(err, io.EOF) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET))
}

// upstreamErr says which exchange with the upstream agent failed, and
// when it did not answer, how long it was waited for.
func (c *conn) upstreamErr(err error, wait time.Duration) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		err = fmt.Errorf("no answer within %v (%w)", wait, os.ErrDeadlineExceeded)
	}
	return fmt.Errorf("upstream agent %s: %w", c.srv.Upstream.Socket, err)
}

// dropUpstream closes the connection's link to the upstream agent.
func (c *conn) dropUpstream() {
	if c.up != nil {
		c.up.conn.Close()
		c.up = nil
	}
}

// closeUpstream lets the link go when the connection ends or goes bare:
// a link that carried no session-bind is kept for another client, if
// there is room.
func (c *conn) closeUpstream() {
	if c.up != nil && !c.up.bound && c.srv.Upstream.idle.put(c.up) {
		c.up = nil
		return
	}
	c.dropUpstream()
}
