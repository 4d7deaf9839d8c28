package bastion

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	gliderssh "github.com/gliderlabs/ssh"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/internal/connlimit"
	"github.com/postern/postern/internal/procid"
	"github.com/postern/postern/internal/safesocket"
	"github.com/postern/postern/internal/safetext"
)

// accept identifies the client, reads its destination and hands the
// connection to the SSH server.
func (s *Server) accept(c *net.UnixConn) {
	log := s.cfg.Log
	helper, slot, t, ok := admitClient(c, s.cfg.Procs, log, s.cfg.Limits, s.cfg.Exhausted)
	if !ok {
		return
	}
	defer helper.Close()
	if slot != nil {
		defer slot.Release()
	}
	if slot != nil {
		defer slot.Busy()() // an SSH connection from now on: never pushed out
	}
	// The requester is the ssh client that runs postern connect as its
	// ProxyCommand: the helper's parent, pinned now, while the helper is
	// alive to vouch for the relationship.
	requester, err := s.cfg.Procs.Pin(helper.PPID)
	if errors.Is(err, procid.ErrNoResources) {
		fmt.Fprintf(c, "error cannot identify the ssh process behind the connection: %s\n", procid.ErrNoResources)
		c.Close()
		return
	}
	if err != nil || requester.StartTicks > helper.StartTicks {
		fmt.Fprintf(c, "error cannot identify the ssh process behind the connection\n")
		c.Close()
		return
	}
	defer requester.Close()
	if requester.Session != helper.Session {
		// ssh runs its ProxyCommand in its own session. A parent in
		// another one adopted a client whose parent exited (a child
		// subreaper such as systemd --user, whose every process a
		// session bound to it would cover).
		fmt.Fprintf(c, "error postern connect's parent, %s (%d), is in another session: it adopted postern connect after the process that started it exited; run postern connect only as ssh's ProxyCommand\n", safetext.Escape(requester.Comm), requester.PID)
		c.Close()
		return
	}
	if err := helper.Verify(); errors.Is(err, procid.ErrNoResources) {
		fmt.Fprintf(c, "error cannot check the connecting process: %s\n", procid.ErrNoResources)
		c.Close()
		return
	} else if err != nil {
		fmt.Fprintf(c, "error the connecting process changed\n")
		c.Close()
		return
	}
	if s.stopping.Load() {
		fmt.Fprintf(c, "error the gateway is stopping\n")
		c.Close()
		return
	}
	info := &connInfo{id: newID(), target: t, requester: requester}
	defer s.track(info, c)()
	info.chain = approvals.ChainText(append(procid.Chain{requester.Process}, requester.Ancestors()...))
	if _, err := c.Write([]byte("ok\n")); err != nil {
		c.Close()
		return
	}
	c.SetDeadline(time.Now().Add(time.Minute)) // the SSH handshake
	log.Info("bastion: connection", "conn", info.id, "target", t.String(), "requester", info.chain)
	shaken, ok := s.handshakeSlot()
	if !ok {
		log.Warn("bastion: closing a connection whose SSH handshake could not begin: other clients' handshakes took every slot for a minute, or the gateway is stopping", "conn", info.id)
		c.Close()
		return
	}
	defer shaken()
	s.ssh.HandleConn(&clientConn{Conn: c, info: info, shaken: shaken})
	info.mu.Lock()
	up := info.up
	info.mu.Unlock()
	if up != nil {
		up.clientGone()
	}
}

// newID names a client connection in logs and journal entries.
func newID() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

type connInfoKey struct{}

// connInfo is what the bastion knows about one client connection.
type connInfo struct {
	id        string
	target    Target
	requester *procid.Peer // the ssh process behind postern connect
	chain     string
	sessions  atomic.Int32 // session channels open (maxSessions)

	mu sync.Mutex
	up *upstream
}

// clientConn carries connInfo through gliderlabs to the handlers.
type clientConn struct {
	net.Conn
	info   *connInfo
	shaken func() // gives back its handshake slot
}

// maxHandshakes bounds the clients in their SSH handshake at once: the
// SSH library reads each packet into a buffer of the size the packet
// announces, up to 256 KiB, and a client may keep its handshake going
// for a minute. The others wait for a slot (within that minute), so that
// a user's 1024 bastion connections cannot each hold a quarter of a
// megabyte of the gateway's memory.
const maxHandshakes = 32

// handshakeSlot waits for a slot for a handshake, for as long as the
// handshake may take or until Stop cuts the connections, and returns the
// function that gives it back (once; later calls do nothing).
func (s *Server) handshakeSlot() (shaken func(), ok bool) {
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	select {
	case s.handshakes <- struct{}{}:
	case <-deadline.C:
		return nil, false
	case <-s.cut:
		return nil, false
	}
	return sync.OnceFunc(func() { <-s.handshakes }), true
}

// clearDeadlineAfterHandshake lifts the handshake deadline once gliderlabs
// has an SSH connection: a client may take its time between commands,
// not during the key exchange.
func clearDeadlineAfterHandshake(ctx gliderssh.Context, c *clientConn) {
	for range 1200 {
		if ctx.Value(gliderssh.ContextKeyConn) != nil {
			c.SetDeadline(time.Time{})
			c.shaken()
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// admitClient admits the client of the bastion's socket (its user, its
// process pinned), counted against limits (nil: no bound) until the
// caller releases its slot, and reads its preamble, within 30 seconds.
// A client waiting to send it is idle: another of its user at the bound
// pushes it out. When it fails, c is closed, the client told why where
// it can be, and ok is false.
func admitClient(c *net.UnixConn, procs *procid.Table, log *slog.Logger, limits *connlimit.Limiter, exhausted func(error)) (helper *procid.Peer, slot *connlimit.Slot, t Target, ok bool) {
	helper, slot, err := safesocket.Admit(c, procs, "bastion", log, limits, exhausted)
	if err != nil {
		switch {
		case errors.Is(err, connlimit.ErrFull):
			fmt.Fprintf(c, "error %v\n", err)
		case errors.Is(err, procid.ErrNoResources):
			fmt.Fprintf(c, "error cannot identify the connecting process: %s\n", procid.ErrNoResources)
		}
		c.Close()
		return nil, nil, Target{}, false
	}
	c.SetDeadline(time.Now().Add(30 * time.Second))
	t, err = readPreamble(bufio.NewReaderSize(oneByte{c}, 16))
	if err != nil {
		fmt.Fprintf(c, "error %v\n", err)
		c.Close()
		helper.Close()
		if slot != nil {
			slot.Release()
		}
		return nil, nil, Target{}, false
	}
	return helper, slot, t, true
}

// RefuseShort answers a client the gateway accepted with the descriptor
// it held in reserve, out of every other (safesocket.Serve): nothing is
// left to identify the client with. It reads the client's preamble and
// answers "error", which ssh shows; nothing is journaled.
func RefuseShort(c *net.UnixConn) {
	readPreamble(bufio.NewReaderSize(oneByte{c}, 16))
	fmt.Fprintf(c, "error cannot accept the connection: %s\n", procid.ErrNoResources)
}

// Refuse answers a client of the bastion's socket that no bastion can
// serve now (its command journal is damaged, say): it admits the client
// as the bastion would, within the same bound of connections (limits,
// exhausted: Config.Limits, Config.Exhausted), reads its preamble, and
// answers "error" with msg, which ssh shows. Nothing is journaled:
// nothing was sent.
func Refuse(c *net.UnixConn, procs *procid.Table, log *slog.Logger, limits *connlimit.Limiter, exhausted func(error), msg string) {
	helper, slot, t, ok := admitClient(c, procs, log, limits, exhausted)
	if !ok {
		return
	}
	defer c.Close()
	defer helper.Close()
	if slot != nil {
		defer slot.Release()
	}
	log.Warn("bastion: refusing a connection", "target", t.String(), "pid", helper.PID, "why", msg)
	fmt.Fprintf(c, "error %s\n", strings.ReplaceAll(msg, "\n", " "))
}
