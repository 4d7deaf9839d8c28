package control

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/postern/postern/internal/connlimit"
	"github.com/postern/postern/internal/procid"
)

// serve starts a server with handle on a socket in a temporary directory.
func serve(t *testing.T, handle Handler) string {
	t.Helper()
	return serveLimited(t, handle, nil)
}

func serveLimited(t *testing.T, handle Handler, limits *connlimit.Limiter) string {
	t.Helper()
	return serveWith(t, &Server{Procs: procid.Host, Log: slog.New(slog.DiscardHandler), Handle: handle, Limits: limits})
}

// serveRefusing is serveLimited with a server that answers a client it
// refuses with "refused: " and why, as the gateway's does.
func serveRefusing(t *testing.T, handle Handler, limits *connlimit.Limiter) string {
	t.Helper()
	return serveWith(t, &Server{Procs: procid.Host, Log: slog.New(slog.DiscardHandler), Handle: handle, Limits: limits,
		Refuse: func(err error) []byte { return []byte("refused: " + err.Error()) }})
}

// serveWith starts s on a socket in a temporary directory.
func serveWith(t *testing.T, s *Server) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "agent.sock.ctl")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Serve(ctx, l); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return sock
}

// reply answers every request with f's line.
func reply(f func(peer *procid.Peer, req []byte) []byte) Handler {
	return func(_ context.Context, p *procid.Peer, req []byte, w *Writer) { w.Line(f(p, req)) }
}

func TestExchange(t *testing.T) {
	var seen *procid.Peer
	sock := serve(t, reply(func(p *procid.Peer, req []byte) []byte {
		seen = p
		return append([]byte("re: "), req...)
	}))
	out, err := Exchange(context.Background(), sock, []byte(`{"op":"echo"}`))
	if err != nil || string(out) != `re: {"op":"echo"}` {
		t.Fatalf("exchange: %q %v", out, err)
	}
	if seen == nil || seen.PID != os.Getpid() {
		t.Fatalf("handler saw peer %+v", seen)
	}
	// An answer longer than the buffer it is read through comes whole.
	long := bytes.Repeat([]byte("y"), 200<<10)
	out, err = Exchange(context.Background(), sock, long)
	if err != nil || !bytes.Equal(out, append([]byte("re: "), long...)) {
		t.Fatalf("a long answer: %d bytes, %v", len(out), err)
	}
	_, err = Exchange(context.Background(), filepath.Join(filepath.Dir(sock), "missing.ctl"), nil)
	if !errors.Is(err, ErrNoGateway) {
		t.Fatalf("exchange with a missing socket: %v", err)
	}
}

// A request over MaxRequest is dropped unanswered, without reaching the
// handler.
func TestExchangeOversized(t *testing.T) {
	called := false
	sock := serve(t, reply(func(*procid.Peer, []byte) []byte {
		called = true
		return []byte("ok")
	}))
	_, err := Exchange(context.Background(), sock, bytes.Repeat([]byte("x"), MaxRequest))
	if err == nil || called {
		t.Fatalf("an oversized request was answered (handler called: %v, err %v)", called, err)
	}
}

// A client that keeps sending a line without its end is cut off once the
// line passes MaxRequest: the server never holds more of it than that.
func TestUnterminatedLineIsCutOff(t *testing.T) {
	sock := serve(t, reply(func(*procid.Peer, []byte) []byte { return []byte("ok") }))
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Minute))
	chunk := bytes.Repeat([]byte("x"), 16<<10)
	sent := 0
	for ; sent < 4*MaxRequest; sent += len(chunk) {
		if _, err := c.Write(chunk); err != nil {
			break
		}
	}
	if sent >= 4*MaxRequest {
		t.Fatalf("the server read %d bytes of one unterminated line", sent)
	}
	if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Fatalf("the server answered: %d %v", n, err)
	}
}

// A stream passes every line to the client; the client hanging up ends
// the handler's context.
func TestStream(t *testing.T) {
	ended := make(chan struct{})
	sock := serve(t, func(ctx context.Context, _ *procid.Peer, req []byte, w *Writer) {
		for i := 0; ; i++ {
			if err := w.Line([]byte(fmt.Sprintf("%s %d", req, i))); err != nil {
				break
			}
			if i == 2 {
				<-ctx.Done()
				close(ended)
				return
			}
		}
	})
	var got []string
	stop := errors.New("enough")
	err := Stream(context.Background(), sock, []byte("line"), func(l []byte) error {
		got = append(got, string(l))
		if len(got) == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || fmt.Sprint(got) != "[line 0 line 1 line 2]" {
		t.Fatalf("stream: %q %v", got, err)
	}
	select {
	case <-ended:
	case <-time.After(time.Minute):
		t.Fatal("the handler's context did not end when the client hung up")
	}
}

// A canceled context ends a call the server does not answer.
func TestExchangeCanceled(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	sock := serve(t, func(context.Context, *procid.Peer, []byte, *Writer) { <-block })
	ctx, cancel := context.WithCancel(context.Background())
	go cancel()
	if _, err := Exchange(ctx, sock, []byte("x")); err == nil {
		t.Fatal("a canceled exchange returned no error")
	}
}

// The handler's context ends when the client goes away, so that a wait
// made on its behalf (a console waiting for cards) ends with it.
func TestHandlerContextEndsWithClient(t *testing.T) {
	ended := make(chan struct{})
	sock := serve(t, func(ctx context.Context, _ *procid.Peer, _ []byte, _ *Writer) {
		<-ctx.Done()
		close(ended)
	})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		time.Sleep(50 * time.Millisecond)
		cancel()
	}()
	Exchange(ctx, sock, []byte("wait"))
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler's context did not end when its client went away")
	}
}

// At its limit, a user's connection that has not sent its request yet
// makes room for a new one; the new one is answered.
func TestLimitsEvictTheIdle(t *testing.T) {
	limits := &connlimit.Limiter{PerUID: 2}
	sock := serveLimited(t, reply(func(*procid.Peer, []byte) []byte { return []byte("ok") }), limits)
	var idle []net.Conn
	for range 2 {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write([]byte("partial"))
		idle = append(idle, c)
		// Idle once identified, and in the order they came: the first
		// is the one idle the longest.
		for limits.Idle() < len(idle) {
			time.Sleep(time.Millisecond)
		}
	}
	out, err := Exchange(context.Background(), sock, []byte("x"))
	if err != nil || string(out) != "ok" {
		t.Fatalf("a new client at the limit: %q %v", out, err)
	}
	idle[0].SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := idle[0].Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("the oldest idle connection: %v", err)
	}
}

// A client whose request is too long is told so before it is cut off.
func TestTooLongIsRefused(t *testing.T) {
	sock := serveRefusing(t, reply(func(*procid.Peer, []byte) []byte { return []byte("ok") }), nil)
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Minute))
	c.Write(bytes.Repeat([]byte("x"), MaxRequest+4096))
	out, _ := io.ReadAll(c)
	if want := fmt.Sprintf("refused: line too long: longer than %d bytes\n", MaxRequest); string(out) != want {
		t.Fatalf("answer %q, want %q", out, want)
	}
}

// A client refused before it sent its request (every connection of its
// user busy) reads the refusal when it sends the request late, rather
// than a broken pipe: the server does not close the connection under a
// request still on its way.
func TestRefusedBeforeItsRequestReadsTheRefusal(t *testing.T) {
	entered, release := make(chan struct{}, 1), make(chan struct{})
	defer close(release)
	sock := serveRefusing(t, func(context.Context, *procid.Peer, []byte, *Writer) { entered <- struct{}{}; <-release }, &connlimit.Limiter{PerUID: 1})
	busy, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	busy.Write([]byte("x\n"))
	<-entered // busy: not to be evicted
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Minute))
	time.Sleep(200 * time.Millisecond) // the server refuses meanwhile
	if _, err := c.Write([]byte("y\n")); err != nil {
		t.Fatalf("writing the request after the refusal: %v", err)
	}
	out, _ := io.ReadAll(c)
	if !bytes.HasPrefix(out, []byte("refused: ")) {
		t.Fatalf("answer %q, want the refusal", out)
	}
}
