package control

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/postern/postern/internal/procid"
)

// serve starts a server with handle on a socket in a temporary directory.
func serve(t *testing.T, handle Handler) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "agent.sock.ctl")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Procs: procid.Host, Log: slog.New(slog.DiscardHandler), Handle: handle}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Serve(ctx, l); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return sock
}

func TestExchange(t *testing.T) {
	var seen *procid.Peer
	sock := serve(t, func(_ context.Context, p *procid.Peer, req []byte) []byte {
		seen = p
		return append([]byte("re: "), req...)
	})
	out, err := Exchange(context.Background(), sock, []byte(`{"op":"echo"}`))
	if err != nil || string(out) != `re: {"op":"echo"}` {
		t.Fatalf("exchange: %q %v", out, err)
	}
	if seen == nil || seen.PID != os.Getpid() {
		t.Fatalf("handler saw peer %+v", seen)
	}
	_, err = Exchange(context.Background(), filepath.Join(filepath.Dir(sock), "missing.ctl"), nil)
	if !errors.Is(err, ErrNoGateway) {
		t.Fatalf("exchange with a missing socket: %v", err)
	}
}

// A request over MaxLine is dropped unanswered, without reaching the
// handler.
func TestExchangeOversized(t *testing.T) {
	called := false
	sock := serve(t, func(context.Context, *procid.Peer, []byte) []byte {
		called = true
		return []byte("ok")
	})
	_, err := Exchange(context.Background(), sock, bytes.Repeat([]byte("x"), MaxLine))
	if err == nil || called {
		t.Fatalf("an oversized request was answered (handler called: %v, err %v)", called, err)
	}
}

// A canceled context ends a call the server does not answer.
func TestExchangeCanceled(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	sock := serve(t, func(context.Context, *procid.Peer, []byte) []byte {
		<-block
		return nil
	})
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
	sock := serve(t, func(ctx context.Context, _ *procid.Peer, _ []byte) []byte {
		<-ctx.Done()
		close(ended)
		return nil
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
