package bastion

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/postern/postern/internal/connlimit"
	"github.com/postern/postern/internal/procid"
	"github.com/postern/postern/internal/safesocket"
)

// A bastion that refuses every client (its journal is damaged) holds a
// client only within the bound of the bastion's connections, as a
// serving one does: a client waiting to send its preamble is idle, and
// the next one of its user pushes it out. Unbounded, a program of the
// user could hold connections, and the gateway's descriptors, without end.
func TestRefusingBastionBoundsItsClients(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "b.sock")
	l, err := safesocket.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	if err := procid.PassCredentials(l); err != nil {
		t.Fatal(err)
	}
	limits := &connlimit.Limiter{PerUID: 1}
	ctx, cancel := context.WithCancel(context.Background())
	var conns sync.WaitGroup
	served := make(chan error, 1)
	go func() {
		served <- safesocket.Serve(ctx, l, &conns, func(c *net.UnixConn) {
			Refuse(c, procid.Host, slog.New(slog.DiscardHandler), limits, nil, "the command journal is damaged")
		}, nil, RefuseShort)
	}()
	var clients []net.Conn
	t.Cleanup(func() {
		for _, c := range clients {
			c.Close()
		}
		cancel()
		<-served
		conns.Wait()
	})
	dial := func() net.Conn {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
		return c
	}
	first := dial()
	// Admitted, the first waits for its preamble, idle; then a second
	// comes.
	for i := 0; limits.Idle() == 0; i++ {
		if i == 2000 {
			t.Fatal("the refusing bastion never counted its client against the bastion's bound")
		}
		time.Sleep(5 * time.Millisecond)
	}
	dial()
	// The deadline only turns a client held on into a failure: the
	// refusal waits 30 seconds for a preamble.
	first.SetReadDeadline(time.Now().Add(15 * time.Second))
	if _, err := first.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("the client idle the longest was not pushed out when another came: %v", err)
	}
}
