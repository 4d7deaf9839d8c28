// Package control is the protocol between the postern command line and a
// running gateway: one JSON request and one JSON response per line, over
// a unix socket that sits beside the agent socket (its path is the agent
// socket's path with ".ctl" appended).
//
// The server identifies every client from kernel evidence, refuses other
// users, and passes the verified peer to the handler, so that a handler
// can refuse, for example, an approval sent from inside the process tree
// that asked for it.
package control

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/postern/postern/internal/procid"
	"github.com/postern/postern/internal/safesocket"
)

// maxLine bounds one request or response.
const maxLine = 4 << 20

// Request is one call.
type Request struct {
	Op   string          `json:"op"`
	Args json.RawMessage `json:"args,omitempty"`
}

// Response answers a Request.
type Response struct {
	Error  string          `json:"error,omitempty"`
	Code   string          `json:"code,omitempty"` // e.g. "denied", "locked", "not_found"
	Result json.RawMessage `json:"result,omitempty"`
}

// Error is an error returned by the gateway. Code classifies it.
type Error struct {
	Code string
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// Errorf builds an Error with a code.
func Errorf(code, format string, args ...any) error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// SocketFor returns the control socket of the gateway serving the agent
// socket sock. A run's socket (sock + ".run-ID") leads to the same
// gateway.
func SocketFor(sock string) string {
	return runSuffix.ReplaceAllString(sock, "") + ".ctl"
}

var runSuffix = regexp.MustCompile(`\.run-[0-9a-f]+$`)

// RunSocket returns the path of a run's own agent socket.
func RunSocket(sock, id string) string { return sock + ".run-" + id }

// Handler answers one operation for a verified peer.
type Handler func(ctx context.Context, peer *procid.Peer, args json.RawMessage) (any, error)

// Server serves the control protocol.
type Server struct {
	Procs    *procid.Table
	Log      *slog.Logger
	Handlers map[string]Handler
	wg       sync.WaitGroup
}

// Serve accepts connections on l until ctx ends.
func (s *Server) Serve(ctx context.Context, l *net.UnixListener) error {
	return safesocket.Serve(ctx, l, &s.wg, func(c *net.UnixConn) { s.handle(ctx, c) })
}

// Wait waits for open connections to finish.
func (s *Server) Wait() { s.wg.Wait() }

func (s *Server) handle(ctx context.Context, c *net.UnixConn) {
	defer c.Close()
	peer, err := s.Procs.PeerOf(c)
	if err != nil {
		s.Log.Warn("control: cannot identify peer", "err", err)
		return
	}
	defer peer.Close()
	if int(peer.UID) != os.Getuid() && peer.UID != 0 {
		s.Log.Warn("control: refusing another user", "uid", peer.UID, "pid", peer.PID)
		return
	}
	r := bufio.NewReaderSize(io.LimitReader(c, maxLine), 64*1024)
	line, err := r.ReadBytes('\n')
	if err != nil {
		return
	}
	var req Request
	resp := Response{}
	if err := json.Unmarshal(line, &req); err != nil {
		resp.Error, resp.Code = "malformed request", "usage"
	} else if h := s.Handlers[req.Op]; h == nil {
		resp.Error, resp.Code = fmt.Sprintf("unknown operation %q (is the gateway older than this command?)", req.Op), "usage"
	} else if err := peer.Verify(); err != nil {
		resp.Error, resp.Code = "the requesting process changed: "+err.Error(), "denied"
	} else {
		res, err := h(ctx, peer, req.Args)
		if err != nil {
			resp.Error = err.Error()
			var ce *Error
			if errors.As(err, &ce) {
				resp.Code = ce.Code
			}
		} else if res != nil {
			resp.Result, _ = json.Marshal(res)
		}
	}
	b, _ := json.Marshal(resp)
	c.Write(append(b, '\n'))
}

// Call sends one request to the gateway at sock and decodes the result
// into out (which may be nil). timeout 0 means none.
func Call(sock, op string, args, out any, timeout time.Duration) error {
	c, err := net.Dial("unix", sock)
	if err != nil {
		return fmt.Errorf("no gateway at %s (%v); is \"postern agent\" running, and is SSH_AUTH_SOCK set?", sock, errors.Unwrap(err))
	}
	defer c.Close()
	if timeout > 0 {
		c.SetDeadline(time.Now().Add(timeout))
	}
	req := Request{Op: op}
	if args != nil {
		if req.Args, err = json.Marshal(args); err != nil {
			return err
		}
	}
	b, _ := json.Marshal(req)
	if _, err := c.Write(append(b, '\n')); err != nil {
		return err
	}
	line, err := bufio.NewReaderSize(io.LimitReader(c, maxLine), 64*1024).ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("the gateway closed the connection without answering: %w", err)
	}
	var resp Response
	if err := json.Unmarshal(line, &resp); err != nil {
		return fmt.Errorf("malformed answer from the gateway: %w", err)
	}
	if resp.Error != "" {
		return &Error{Code: resp.Code, Msg: strings.TrimSpace(resp.Error)}
	}
	if out != nil && len(resp.Result) > 0 {
		return json.Unmarshal(resp.Result, out)
	}
	return nil
}
