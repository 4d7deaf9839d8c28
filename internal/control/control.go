// Package control carries the control protocol between the postern
// command line and a running gateway: one request line per connection,
// answered by one response line, or by a stream of lines for the calls
// that follow something, over a unix socket that sits beside the agent
// socket. What the lines mean is the contract in gateway/api; this
// package only moves them.
//
// The server admits every client through procid.Table.Admit (identified
// from kernel evidence, other users refused) and passes the verified peer
// to the handler with the request, so that the gateway can refuse, for
// example, an approval sent from inside the process tree that asked for
// it.
//
// # Bounds
//
// A request is at most MaxRequest bytes and must arrive within
// RequestTimeout of the connection; it is read as it arrives, so that a
// client that announces nothing and sends little holds little. Each
// user's connections are bounded by the server's Limits (a connection
// still sending its request is idle, and the first pushed out). The
// handler's context ends when the client hangs up, which ends a stream.
// A response line the client reads is at most MaxResponse bytes.
package control

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/postern/postern/internal/connlimit"
	"github.com/postern/postern/internal/procid"
	"github.com/postern/postern/internal/safesocket"
)

// Bounds of the protocol.
const (
	MaxRequest     = 256 << 10 // one request line, newline included
	MaxResponse    = 64 << 20  // one response line, as the client reads it
	RequestTimeout = 10 * time.Second
	writeTimeout   = 30 * time.Second // for one response line, unless paced
)

// ErrNoGateway is returned by Exchange and Stream when nothing answers at
// the socket.
var ErrNoGateway = errors.New("no gateway")

// Handler answers one request line (without its newline) from a verified
// peer, writing its answer through w: one line, or for a stream several,
// until it returns. ctx ends when the client hangs up or the server
// stops.
//
// A request may carry a secret (a passphrase, a private key to add): the
// line is the only copy the server keeps of it, and the handler may clear
// it as soon as it has decoded it; the server clears it once the handler
// returns.
type Handler func(ctx context.Context, peer *procid.Peer, request []byte, w *Writer)

// Writer writes response lines to one client.
type Writer struct {
	c     net.Conn
	err   error
	paced bool
}

// Paced makes the lines wait for the client as long as it stays
// connected, for a stream a person reads at their own pace (through a
// pager): a write fails when the client hangs up or the server stops,
// not once the client has read nothing for writeTimeout.
func (w *Writer) Paced() { w.paced = true }

// Line writes one response line; it adds the newline. After a failed
// write every later one fails too.
func (w *Writer) Line(b []byte) error {
	if w.err != nil {
		return w.err
	}
	deadline := time.Time{}
	if !w.paced {
		deadline = time.Now().Add(writeTimeout)
	}
	w.c.SetWriteDeadline(deadline)
	if _, err := w.c.Write(append(b, '\n')); err != nil {
		w.err = err
	}
	return w.err
}

// Server serves the control socket.
type Server struct {
	Procs  *procid.Table
	Log    *slog.Logger
	Handle Handler
	// Limits bounds each user's connections (nil: no bound).
	Limits *connlimit.Limiter
	// Exhausted is called when accept fails for want of descriptors or
	// memory (safesocket.Serve).
	Exhausted func(error)
	// Refuse makes the response line a client is refused with: every
	// connection of its user is busy, its request is too long, the
	// requests being read hold as much as they may (maxReading), or the
	// server is short of descriptors or memory to identify it with (nil:
	// the connection is closed unanswered).
	Refuse  func(error) []byte
	wg      sync.WaitGroup
	reading connlimit.Bytes // what request lines hold (maxReading)
}

// Serve accepts connections on l until ctx ends.
func (s *Server) Serve(ctx context.Context, l *net.UnixListener) error {
	return safesocket.Serve(ctx, l, &s.wg, func(c *net.UnixConn) { s.handle(ctx, c) }, s.Exhausted,
		func(c *net.UnixConn) { s.refuse(c, procid.ErrNoResources) })
}

// Wait waits for open connections to finish. Once the context Serve was
// given ends, each is cut, so Wait returns as soon as the handlers see it.
func (s *Server) Wait() { s.wg.Wait() }

func (s *Server) handle(ctx context.Context, c *net.UnixConn) {
	defer c.Close()
	// When the server stops, the connection is cut wherever it waits (for
	// a request, to write, for a change to follow), so that Wait returns.
	defer context.AfterFunc(ctx, func() { c.Close() })()
	peer, slot, err := safesocket.AdmitOpaque(c, s.Procs, "control", s.Log, s.Limits, s.Exhausted)
	if err != nil {
		if errors.Is(err, connlimit.ErrFull) || errors.Is(err, procid.ErrNoResources) {
			s.refuse(c, err)
		}
		return
	}
	defer peer.Close()
	if slot != nil {
		defer slot.Release()
	}
	c.SetReadDeadline(time.Now().Add(RequestTimeout))
	r := bufio.NewReaderSize(c, 512)
	line, held, err := readLineTaking(r, MaxRequest, func(k int) bool { return s.reading.Take(k, maxReading) })
	defer s.reading.Give(held) // once answered
	defer clear(line)
	forget(r, c)
	if errors.Is(err, errTooLong) || errors.Is(err, errReading) {
		s.refuse(c, err)
	}
	if err != nil {
		if slot == nil || !slot.Evicted() {
			s.Log.Debug("control connection without a request", "pid", peer.PID, "err", err)
		}
		return
	}
	if slot != nil {
		defer slot.Busy()()
	}
	c.SetReadDeadline(time.Time{})
	// The client sends nothing after its request: a read that returns
	// means it hung up.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		r.ReadByte()
		cancel()
	}()
	s.Handle(ctx, peer, line, &Writer{c: c})
}

// refuse writes the line Refuse makes of err, if the client takes it at
// once. A client refused before its request was read may not have sent
// it yet: were the connection closed at once, that write would fail
// (EPIPE) and the client would report a broken pipe, not the refusal.
// So the connection is closed for writing, and what the client sends is
// read and dropped until it hangs up, at most refuseDrain bytes within
// safesocket.RefuseTime, before the caller closes it; past the refusals
// safesocket.Refuse keeps at once, the client is not answered.
func (s *Server) refuse(c *net.UnixConn, err error) {
	if s.Refuse == nil {
		return
	}
	safesocket.Refuse(c, func(c *net.UnixConn) {
		if _, err := c.Write(append(s.Refuse(err), '\n')); err != nil {
			return
		}
		c.CloseWrite()
		io.CopyN(io.Discard, c, refuseDrain)
	})
}

// refuseDrain bounds what a refused client's request is read of after
// its refusal: a request line at most, and a few bytes for the line end.
const refuseDrain = MaxRequest + 16

// forget clears r's buffer, which holds the request as it was read (all
// of a short one), and has r read c again.
func forget(r *bufio.Reader, c io.Reader) {
	r.Reset(zeros{})
	r.Peek(r.Size()) // fills the whole buffer with zeros
	r.Reset(c)
}

// zeros reads as endless zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// errTooLong is readLine's error for a line over its bound.
var errTooLong = errors.New("line too long")

// maxReading bounds the bytes the request lines of every control
// connection hold together, past smallLine each, while they are read and
// answered: each may hold MaxRequest for RequestTimeout, and a user may
// hold 256 connections. The short lines of most requests take nothing
// from it, so that long ones never keep them out.
const (
	maxReading = 16 << 20
	smallLine  = 4 << 10
)

// errReading refuses a request line that would take the bytes held past
// maxReading.
var errReading = fmt.Errorf("the control socket holds %d MiB of requests being received or answered, as much as it takes", maxReading>>20)

// readLine reads one line of at most max bytes (newline included) as it
// arrives and drops its newline.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	line, _, err := readLineTaking(r, max, func(int) bool { return true })
	return line, err
}

// readLineTaking is readLine, with the line's buffer beyond smallLine
// taken, as it grows, from what every connection may hold together
// (take); held is what was taken, for the caller to give back.
// What the line held so far is cleared wherever it is dropped: as it
// grows, and when it fails.
func readLineTaking(r *bufio.Reader, most int, take func(int) bool) (line []byte, held int, err error) {
	defer func() {
		if err != nil {
			clear(line)
			line = nil
		}
	}()
	for {
		chunk, err := r.ReadSlice('\n')
		n := len(line) + len(chunk)
		if n > most {
			return line, held, fmt.Errorf("%w: longer than %d bytes", errTooLong, most)
		}
		if n > cap(line) {
			size := min(max(n, 2*cap(line)), most)
			if k := max(size, smallLine) - max(cap(line), smallLine); k > 0 {
				if !take(k) {
					return line, held, errReading
				}
				held += k
			}
			grown := make([]byte, len(line), size)
			copy(grown, line)
			clear(line)
			line = grown
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return line[:len(line)-1], held, nil
		case !errors.Is(err, bufio.ErrBufferFull):
			return line, held, err
		}
	}
}

// Exchange sends one request line to the server at sock and returns its
// response line. The exchange ends when ctx does.
func Exchange(ctx context.Context, sock string, request []byte) ([]byte, error) {
	var line []byte
	// Most answers are short (an answer to a card, a status): the line
	// is read through a small buffer, and a long one grows as it comes.
	err := stream(ctx, sock, request, 4<<10, func(l []byte) error {
		line = l
		return io.EOF // one line is the whole answer
	})
	if errors.Is(err, io.EOF) {
		return line, nil
	}
	if err == nil {
		err = errors.New("the gateway closed the connection without answering")
	}
	return nil, err
}

// Stream sends one request line to the server at sock and passes each
// response line to fn, until the server ends the stream (nil), fn
// returns an error (that error), or ctx ends.
func Stream(ctx context.Context, sock string, request []byte, fn func(line []byte) error) error {
	return stream(ctx, sock, request, 64<<10, fn)
}

// stream is Stream, reading through a buffer of size bytes.
func stream(ctx context.Context, sock string, request []byte, size int, fn func(line []byte) error) error {
	if len(request)+1 > MaxRequest {
		return fmt.Errorf("the request is %d bytes, longer than the gateway takes (%d)", len(request)+1, MaxRequest)
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		return fmt.Errorf("%w at %s (%v)", ErrNoGateway, sock, errors.Unwrap(err))
	}
	defer c.Close()
	// The context alone cuts the exchange, so that a read cut short
	// always finds it ended, and says why (its cause).
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
	defer stop()
	_, werr := c.Write(append(request, '\n'))
	r := bufio.NewReaderSize(c, size)
	for {
		line, err := readLine(r, MaxResponse)
		if werr != nil {
			// The server may have refused the client before it took the
			// request: its answer says why, else the write does.
			if err != nil {
				return werr
			}
			return fn(line)
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			return fmt.Errorf("reading the gateway's answer: %w", err)
		}
		if err := fn(line); err != nil {
			return err
		}
	}
}
