// Package control carries the control protocol between the postern
// command line and a running gateway: one request line and one response
// line per connection, each at most MaxLine bytes, over a unix socket
// that sits beside the agent socket. What the lines mean is the contract
// in gateway/api; this package only moves them.
//
// The server admits every client through procid.Table.Admit (identified
// from kernel evidence, other users refused) and passes the verified peer
// to the handler with the request, so that the gateway can refuse, for
// example, an approval sent from inside the process tree that asked for
// it.
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

	"github.com/postern/postern/internal/procid"
	"github.com/postern/postern/internal/safesocket"
)

// MaxLine bounds one request or response, newline included.
const MaxLine = 4 << 20

// ErrNoGateway is returned by Exchange when nothing answers at the socket.
var ErrNoGateway = errors.New("no gateway")

// Handler answers one request line from a verified peer with one
// response line (both without the newline). Its context ends when the
// client closes its connection.
type Handler func(ctx context.Context, peer *procid.Peer, request []byte) (response []byte)

// Server serves the control socket.
type Server struct {
	Procs  *procid.Table
	Log    *slog.Logger
	Handle Handler
	wg     sync.WaitGroup
}

// Serve accepts connections on l until ctx ends.
func (s *Server) Serve(ctx context.Context, l *net.UnixListener) error {
	return safesocket.Serve(ctx, l, &s.wg, func(c *net.UnixConn) { s.handle(ctx, c) })
}

// Wait waits for open connections to finish.
func (s *Server) Wait() { s.wg.Wait() }

func (s *Server) handle(ctx context.Context, c *net.UnixConn) {
	defer c.Close()
	peer, err := s.Procs.Admit(c, "control", s.Log)
	if err != nil {
		return
	}
	defer peer.Close()
	line, err := readLine(c)
	if err != nil {
		return
	}
	// A client sends nothing after its request: a read that returns means
	// it went away, and whatever waits on its behalf stops.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		var b [1]byte
		c.Read(b[:])
		cancel()
	}()
	c.Write(append(s.Handle(ctx, peer, line), '\n'))
}

// readLine reads one line of at most MaxLine bytes and drops its newline.
func readLine(r io.Reader) ([]byte, error) {
	line, err := bufio.NewReaderSize(io.LimitReader(r, MaxLine), 64*1024).ReadBytes('\n')
	if err != nil {
		return nil, err
	}
	return line[:len(line)-1], nil
}

// Exchange sends one request line to the server at sock and returns its
// response line. The exchange ends when ctx does.
func Exchange(ctx context.Context, sock string, request []byte) ([]byte, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		return nil, fmt.Errorf("%w at %s (%v)", ErrNoGateway, sock, errors.Unwrap(err))
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
	defer stop()
	if _, err := c.Write(append(request, '\n')); err != nil {
		return nil, err
	}
	line, err := readLine(c)
	if err != nil {
		return nil, fmt.Errorf("the gateway closed the connection without answering: %w", err)
	}
	return line, nil
}
