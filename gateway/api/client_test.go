package api

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A call without a time limit of its own gets the default one: against
// a gateway that takes the connection and never answers (stopped, or
// something else at its socket), postern vault list gives up.
func TestCallWithoutItsOwnLimitGivesUp(t *testing.T) {
	defer func(d time.Duration) { defaultTimeout = d }(defaultTimeout)
	defaultTimeout = 100 * time.Millisecond
	sock := silentGateway(t)
	done := make(chan error, 1)
	go func() {
		_, err := NewClient(sock).VaultList(context.Background(), "")
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("vault.list answered by nothing returned no error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("vault.list still waits after 5s for a gateway that never answers")
	}
}

// A call whose time limit passed says so, and which call it was, not
// only that a context's deadline passed; the caller's own deadline is
// the caller's to name.
func TestUnansweredCallSaysSo(t *testing.T) {
	defer func(d time.Duration) { defaultTimeout = d }(defaultTimeout)
	defaultTimeout = 100 * time.Millisecond
	sock := silentGateway(t)
	_, err := NewClient(sock).Sessions(context.Background())
	if !errors.Is(err, ErrNoAnswer) || !strings.Contains(err.Error(), "sessions") || !strings.Contains(err.Error(), "100ms") {
		t.Fatalf("a call the gateway never answered: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := NewClient(sock).Sessions(ctx); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrNoAnswer) {
		t.Fatalf("a call whose caller's deadline passed: %v", err)
	}
}

// silentGateway listens at the control socket beside an agent socket it
// returns, takes every connection and never answers.
func silentGateway(t *testing.T) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "agent.sock")
	l, err := net.Listen("unix", ControlSocket(sock))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var held []net.Conn // taken, never answered
		for {
			c, err := l.Accept()
			if err != nil {
				for _, c := range held {
					c.Close()
				}
				return
			}
			held = append(held, c)
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
	})
	return sock
}
