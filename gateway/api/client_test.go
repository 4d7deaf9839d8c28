package api

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"
)

// A call without a time limit of its own gets the default one: against
// a gateway that takes the connection and never answers (stopped, or
// something else at its socket), postern vault list gives up.
func TestCallWithoutItsOwnLimitGivesUp(t *testing.T) {
	defer func(d time.Duration) { defaultTimeout = d }(defaultTimeout)
	defaultTimeout = 100 * time.Millisecond
	sock := filepath.Join(t.TempDir(), "agent.sock")
	l, err := net.Listen("unix", ControlSocket(sock))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
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
