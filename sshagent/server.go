package sshagent

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/connlimit"
	"github.com/postern/postern/internal/park"
	"github.com/postern/postern/internal/procid"
	"github.com/postern/postern/internal/safesocket"
)

// MaxMessage is the largest request the agent reads. OpenSSH's own agent
// uses the same bound; anything larger closes the connection.
const MaxMessage = 256 * 1024

// bodyTimeout bounds how long a client may take to send a request once it
// has sent the request's length.
const bodyTimeout = 30 * time.Second

// replyTimeout bounds how long an answer waits for the client to read the
// answers before it: a client that sends requests and reads nothing ends
// its connection instead of holding it busy, and counted, for ever.
var replyTimeout = bodyTimeout

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
	// Record appends an event to the audit log: the changes clients make
	// to the agent's keys (keyevents.go). nil records nothing.
	Record func(audit.Event) error
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
	// Before, when set, is called before each request is processed: the
	// gateway acts there on a signal it received and has not acted on
	// yet (SIGUSR1 removes every key), so that a request a client sends
	// after the signal is answered after it, as ssh-agent answers it.
	Before func()

	wg        sync.WaitGroup  // the connections, parked or served
	receiving connlimit.Bytes // the bytes large requests hold (maxReceiving)
	lot       park.Lot        // the idle connections
	bare      barer           // makes the long idle ones bare
	pkcs11    pkcs11Set
	upKeys    upstreamKeys
	own       ownSockets // where it listens: never its own upstream
	runAdds   runAdds
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

// Serve accepts connections on l until ctx is done or l is closed (also
// before Serve began: it then returns nil at once). The
// listener must have been prepared with procid.PassCredentials before its
// path was published, so that the sender of every message is known even
// for clients that connect before Serve runs; Serve sets it again.
func (s *Server) Serve(ctx context.Context, l *net.UnixListener, ep *Endpoint) error {
	if err := procid.PassCredentials(l); err != nil {
		if errors.Is(err, net.ErrClosed) {
			// Closed before it was served (a run's socket, as the run
			// ended): as when closed while served, not a failure.
			return nil
		}
		return fmt.Errorf("enabling per-message credentials: %w", err)
	}
	s.own.add(l.Addr())
	defer s.own.remove(l.Addr())
	return safesocket.Serve(ctx, l, &s.wg, func(c *net.UnixConn) { s.handle(ctx, c, ep) }, s.Exhausted, refuseShort)
}

// Wait waits for the connections being served to end.
func (s *Server) Wait() { s.wg.Wait() }

// handle takes in one connection. The peer is identified at accept and
// verified again before each request; the bytes of each request must all
// come from that peer. Between requests the connection is parked
// (package park): an idle connection holds no goroutine, and the
// goroutine that serves a request starts when the request comes.
func (s *Server) handle(ctx context.Context, c *net.UnixConn, ep *Endpoint) {
	peer, slot, err := safesocket.Admit(c, s.Procs, "agent", s.Log, s.Limits, s.Exhausted)
	if err != nil {
		// A client of the user's refused for want of descriptors, or
		// with every connection of its user busy, gets the agent's
		// failure to its request, not a connection closed under it,
		// if it sends it within a second and fewer than 64 refusals
		// wait (safesocket.Refuse): a flood's clients hold no more.
		if errors.Is(err, procid.ErrNoResources) || errors.Is(err, connlimit.ErrFull) {
			safesocket.Refuse(c, refuseShort)
		}
		c.Close()
		return
	}
	cn := &conn{srv: s, ep: ep, ctx: ctx, peer: peer, c: c, slot: slot}
	cn.log = connLog{cn}
	s.wg.Add(1)
	if ep.Admit != nil {
		if err := ep.Admit(peer); err != nil {
			cn.log.Warn("refusing connection", "err", err)
			cn.end()
			return
		}
	}
	cn.sc = procid.NewSenderConn(c)
	cn.spot, _ = s.lot.Spot(c, cn.serve) // none: the connection is never parked
	if slot != nil {
		slot.SetCloser(cn)
	}
	cn.serve()
}

// linger is how long a connection that can be parked waits for its next
// request before it is: a client that sends its requests one after the
// other (ssh's session-bind and signature, a signing loop) is served
// without the hop through the Lot.
const linger = 2 * time.Millisecond

// serve answers the connection's requests as long as they come, parks
// the connection when none has come for a while (linger), and ends it
// when it fails or its peer closes it. It runs in a goroutine of its own,
// from handle or when the parked connection becomes readable.
func (cn *conn) serve() {
	if cn.bare && !cn.attach() {
		cn.end()
		return
	}
	wait := time.Duration(0)
	if cn.spot != nil {
		wait = linger
	}
	for {
		switch cn.srv.serveOne(cn, wait) {
		case closed:
			cn.end()
			return
		case idle:
			if cn.park() {
				return // the connection is no longer this goroutine's
			}
			wait = 0 // not parked: wait in the read
		}
	}
}

// park parks the connection until it is readable, and reports whether it
// did; when it did not (no parking here), the caller waits in its read.
// A connection that stays parked is made bare (bare.go).
func (cn *conn) park() bool {
	if cn.spot == nil {
		return false
	}
	cn.srv.bare.parking(cn)
	return cn.spot.Park()
}

// Close is how the connection limiter ends an idle connection to make
// room: a parked connection, which no goroutine serves, is ended here;
// one that a goroutine has is closed (a bare one's socket shut down), and
// that goroutine ends it.
func (cn *conn) Close() error {
	if cn.spot != nil && cn.spot.Leave() {
		cn.end()
		return nil
	}
	cn.mu.Lock()
	defer cn.mu.Unlock()
	switch {
	case cn.bare:
		return unix.Shutdown(cn.fd, unix.SHUT_RDWR)
	case cn.c != nil:
		return cn.c.Close()
	}
	return nil
}

// end releases what the connection holds and closes it.
func (cn *conn) end() {
	cn.closeUpstream()
	if cn.slot != nil {
		cn.slot.Release()
	}
	cn.peer.Close()
	cn.mu.Lock()
	c, fd, bare := cn.c, cn.fd, cn.bare
	cn.fd, cn.bare = -1, false
	cn.mu.Unlock()
	switch {
	case bare:
		unix.Close(fd)
		cn.srv.bare.n.Add(-1)
	case c != nil:
		c.Close()
	}
	cn.srv.wg.Done()
}

// What became of a connection that waited for a request.
type outcome int

const (
	answered outcome = iota // a request came and was answered
	idle                    // none began within the wait
	closed                  // the connection failed or its peer closed it
)

// serveOne reads one request and answers it, waiting at most wait for it
// to begin (0: as long as it takes). The connection is idle while it
// waits for the request's length, and busy from then until the answer is
// written.
func (s *Server) serveOne(cn *conn, wait time.Duration) outcome {
	log, peer, slot, sc := cn.log, cn.peer, cn.slot, cn.sc
	sc.ResetSenders()
	n, err := readLength(sc, wait)
	if errors.Is(err, errNoRequest) {
		return idle
	}
	if err != nil {
		if !errors.Is(err, io.EOF) && (slot == nil || !slot.Evicted()) {
			log.Warn("closing connection", "err", err)
		}
		return closed
	}
	if slot != nil {
		defer slot.Busy()()
	}
	req, held, err := readBody(sc, n, func(k int) bool { return s.receiving.Take(k, maxReceiving) })
	defer s.receiving.Give(held) // once answered
	if err != nil {
		log.Warn("closing connection", "err", err)
		return closed
	}
	if pid, known := sc.Sender(); known && pid != peer.PID {
		log.Warn("closing connection: request written by another process than the one that connected", "sender", pid)
		return closed
	}
	if err := peer.Verify(); err != nil {
		if errors.Is(err, procid.ErrNoResources) {
			log.Warn("closing connection: cannot check that the peer is the process that connected", "err", err)
		} else {
			log.Warn("closing connection: the peer is no longer the process that connected", "err", err)
		}
		cn.c.SetWriteDeadline(time.Now().Add(replyTimeout))
		cn.c.Write(replyFailure)
		return closed
	}
	if s.Before != nil {
		s.Before()
	}
	out := process(cn, req) // may wait for a person: the deadline starts after
	cn.c.SetWriteDeadline(time.Now().Add(replyTimeout))
	if _, err = cn.c.Write(out); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			log.Warn("closing connection: the client reads no answers")
		}
		return closed
	}
	return answered
}

// errNoRequest is readLength's wait ending before a request began.
var errNoRequest = errors.New("no request began")

// readLength reads the length prefix of the next request and checks it.
// It waits at most wait for the request to begin (errNoRequest), or as
// long as it takes when wait is 0; once its first bytes have come, the
// rest of the length must come within bodyTimeout.
func readLength(c *procid.SenderConn, wait time.Duration) (uint32, error) {
	var hdr [4]byte
	if wait > 0 {
		c.WaitAtMost(wait)
	}
	got, err := c.Read(hdr[:])
	if wait > 0 {
		c.Unbound()
		if got == 0 && errors.Is(err, os.ErrDeadlineExceeded) {
			return 0, errNoRequest
		}
	}
	if err != nil {
		return 0, err
	}
	if got < len(hdr) {
		c.WaitAtMost(bodyTimeout)
		_, err = io.ReadFull(c, hdr[got:])
		c.Unbound()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return 0, fmt.Errorf("reading a request's length: %w", err)
		}
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
// nothing holds a few hundred bytes, for at most bodyTimeout. The bytes
// of a request larger than smallRequest are taken, as its buffer grows,
// from what every connection may hold together (take); held is what was
// taken, for the caller to give back once the request is answered.
func readBody(c *procid.SenderConn, n uint32, take func(int) bool) (msg []byte, held int, err error) {
	c.WaitAtMost(bodyTimeout)
	defer c.Unbound()
	if n <= smallRequest {
		// Most requests: read into a buffer of their size.
		msg = binary.BigEndian.AppendUint32(make([]byte, 0, 4+n), n)
		_, err = io.ReadFull(c, msg[4:4+n])
		msg = msg[:4+n]
	} else {
		msg, held, err = readGrowing(c, n, take)
	}
	if err != nil {
		clear(msg)
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, held, fmt.Errorf("reading request: %w", err)
	}
	return msg, held, nil
}

// readGrowing reads a request of n bytes into a buffer that doubles as
// its bytes come, each smaller buffer cleared once copied: an add
// carries a private key, which no buffer left to the garbage collector
// may keep. Each growth is taken first (take); held is the sum taken.
func readGrowing(c io.Reader, n uint32, take func(int) bool) (msg []byte, held int, err error) {
	total := 4 + int(n)
	msg = binary.BigEndian.AppendUint32(make([]byte, 0, 4+smallRequest), n)
	for len(msg) < total {
		if len(msg) == cap(msg) {
			size := min(2*cap(msg), total)
			if !take(size - cap(msg)) {
				return msg, held, errReceiving
			}
			held += size - cap(msg)
			bigger := make([]byte, len(msg), size)
			copy(bigger, msg)
			clear(msg)
			msg = bigger
		}
		k, err := c.Read(msg[len(msg):cap(msg)])
		msg = msg[:len(msg)+k]
		if err != nil && len(msg) < total {
			return msg, held, err
		}
	}
	return msg, held, nil
}

// smallRequest is the largest request read into a buffer of its
// announced size at once; a larger one grows with what arrives.
const smallRequest = 1024

// maxReceiving bounds the bytes the requests larger than smallRequest
// hold together, over every connection, from their first byte until
// they are answered: each may hold MaxMessage for bodyTimeout, and a
// connection is cheap. Past it, the request that would grow is refused
// and its connection closed.
const maxReceiving = 64 << 20

// errReceiving refuses a request that would take the bytes held past
// maxReceiving.
var errReceiving = fmt.Errorf("the agent holds %d MiB of requests being received or answered, as much as it takes; refusing a larger one", maxReceiving>>20)

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
