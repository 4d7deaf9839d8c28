package sshagent

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/internal/connlimit"
	"github.com/postern/postern/internal/procid"
	"github.com/postern/postern/internal/safesocket"
)

// MaxMessage is the largest request the agent reads. OpenSSH's own agent
// uses the same bound; anything larger closes the connection.
const MaxMessage = 256 * 1024

// bodyTimeout bounds how long a client may take to send a request once it
// has sent the request's length.
const bodyTimeout = 30 * time.Second

// A Locker locks and unlocks the gateway for ssh-add -x and -X.
type Locker interface {
	Lock(passphrase []byte) error
	Unlock(passphrase []byte) error
}

// Server serves the agent protocol. Its fields must be set before Serve.
type Server struct {
	Keys    *Keyring
	Decider approvals.Decider
	Locker  Locker
	Procs   *procid.Table
	Log     *slog.Logger
	// Providers is the allow-list of FIDO and PKCS#11 provider libraries
	// (ssh-agent -P): comma-separated patterns, "!" to exclude; empty
	// means DefaultProviders.
	Providers string
	// Why, when set, answers the why@postern extension for a verified
	// peer on the endpoint's channel.
	Why func(peer *procid.Peer, ch approvals.Channel) ([]byte, error)
	// TouchTimeout is how long a signature waits, once decided, for the
	// device or agent that holds the key: a security key's touch, a
	// PKCS#11 token, an upstream agent's own confirmation. The gateway
	// gives card_timeout: a person has as long to touch a key as to
	// answer a card. nil means DefaultTouchTimeout.
	TouchTimeout func() time.Duration
	// Upstream is the agent whose keys are listed beside the agent's
	// own and gated like them; nil for none.
	Upstream *UpstreamAgent
	// Limits bounds the connections each user holds, across every
	// endpoint served (nil: no bound). A connection waiting for its next
	// request is idle, and the first pushed out.
	Limits *connlimit.Limiter
	// Exhausted is called when accept fails for want of descriptors or
	// memory (safesocket.Serve); nil only waits.
	Exhausted func(error)

	wg     sync.WaitGroup
	pkcs11 pkcs11Set
	upKeys upstreamKeys
}

// DefaultTouchTimeout is Server.TouchTimeout's default, that of
// card_timeout.
const DefaultTouchTimeout = 60 * time.Second

func (s *Server) touchTimeout() time.Duration {
	if s.TouchTimeout != nil {
		if d := s.TouchTimeout(); d > 0 {
			return d
		}
	}
	return DefaultTouchTimeout
}

// errTouchTimeout is a device or upstream agent that did not answer in
// time.
var errTouchTimeout = errors.New("no answer from the device in time (nobody touched or confirmed it)")

// An Endpoint is one listening socket and the clients it admits.
type Endpoint struct {
	Channel approvals.Channel
	// Admit, when set, is asked about every peer procid.Table.Admit
	// admitted; an error refuses the connection.
	Admit func(*procid.Peer) error
}

// Serve accepts connections on l until ctx is done or l is closed. The
// listener must have been prepared with procid.PassCredentials before its
// path was published, so that the sender of every message is known even
// for clients that connect before Serve runs; Serve sets it again.
func (s *Server) Serve(ctx context.Context, l *net.UnixListener, ep *Endpoint) error {
	if err := procid.PassCredentials(l); err != nil {
		return fmt.Errorf("enabling per-message credentials: %w", err)
	}
	return safesocket.Serve(ctx, l, &s.wg, func(c *net.UnixConn) { s.handle(ctx, c, ep) }, s.Exhausted)
}

// Wait waits for the connections being served to end.
func (s *Server) Wait() { s.wg.Wait() }

// handle serves one connection. The peer is identified at accept and
// verified again before each request; the bytes of each request must all
// come from that peer.
func (s *Server) handle(ctx context.Context, c *net.UnixConn, ep *Endpoint) {
	defer c.Close()
	peer, slot, err := safesocket.Admit(c, s.Procs, "agent", s.Log, s.Limits, s.Exhausted)
	if err != nil {
		return
	}
	defer peer.Close()
	if slot != nil {
		defer slot.Release()
	}
	log := s.Log.With("pid", peer.PID, "exe", peer.Exe.Path)
	if ep.Admit != nil {
		if err := ep.Admit(peer); err != nil {
			log.Warn("refusing connection", "err", err)
			return
		}
	}
	cn := &conn{srv: s, ep: ep, ctx: ctx, peer: peer, log: log}
	defer cn.closeUpstream()
	sc := procid.NewSenderConn(c)
	for {
		sc.ResetSenders()
		if !s.serveOne(sc, c, cn, slot) {
			return
		}
	}
}

// serveOne reads one request and answers it, and reports whether the
// connection goes on. The connection is idle while it waits for the
// request's length, and busy from then until the answer is written.
func (s *Server) serveOne(sc *procid.SenderConn, c *net.UnixConn, cn *conn, slot *connlimit.Slot) bool {
	log, peer := cn.log, cn.peer
	n, err := readLength(sc)
	if err != nil {
		if !errors.Is(err, io.EOF) && (slot == nil || !slot.Evicted()) {
			log.Warn("closing connection", "err", err)
		}
		return false
	}
	if slot != nil {
		defer slot.Busy()()
	}
	req, err := readBody(sc, n)
	if err != nil {
		log.Warn("closing connection", "err", err)
		return false
	}
	if pid, known := sc.Sender(); known && pid != peer.PID {
		log.Warn("closing connection: request written by another process than the one that connected", "sender", pid)
		return false
	}
	if err := peer.Verify(); err != nil {
		log.Warn("closing connection: the peer is no longer the process that connected", "err", err)
		c.Write(replyFailure)
		return false
	}
	_, err = c.Write(process(cn, req))
	return err == nil
}

// readLength reads the length prefix of the next request and checks it.
func readLength(c *procid.SenderConn) (uint32, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return 0, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n == 0 || n > MaxMessage {
		return 0, fmt.Errorf("request of %d bytes (limit %d)", n, MaxMessage)
	}
	return n, nil
}

// readBody reads a request of n bytes and returns it with its length
// prefix. Memory grows with the bytes that arrive, not with the length
// announced: a client that announces the largest request and sends
// nothing holds a few hundred bytes, for at most bodyTimeout.
func readBody(c *procid.SenderConn, n uint32) ([]byte, error) {
	c.SetReadDeadline(time.Now().Add(bodyTimeout))
	defer c.SetReadDeadline(time.Time{})
	msg := bytes.NewBuffer(make([]byte, 0, 4+min(n, 1024)))
	binary.Write(msg, binary.BigEndian, n)
	if _, err := io.CopyN(msg, c, int64(n)); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("reading request: %w", err)
	}
	return msg.Bytes(), nil
}

// process answers one request (with its length prefix), never panicking
// on malformed input.
func process(cn *conn, req []byte) (out []byte) {
	defer func() {
		if r := recover(); r != nil {
			cn.log.Error("malformed request caused a panic in the protocol parser", "panic", r)
			out = replyFailure
		}
	}()
	return cn.dispatch(req[4:])
}
