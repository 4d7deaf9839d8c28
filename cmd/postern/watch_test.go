package main

import (
	"bufio"
	"context"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/postern/postern/gateway/api"
)

// What a console says of its connection to the gateway (why it cannot
// reach it, that it restarted) holds the gateway's words: they are
// escaped before a person sees them, on the line consoles as on the
// full-screen one, whatever answers on the control socket.
func TestConsoleConnectionMessagesAreEscaped(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "agent.sock")
	l, err := net.Listen("unix", api.ControlSocket(sock))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			bufio.NewReader(c).ReadString('\n')
			c.Write([]byte(`{"error":"refused \u001b]0;owned\u0007\u001b[2J here","code":"internal"}` + "\n"))
			c.Close()
		}
	}()
	var mu sync.Mutex
	var said []string
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &cardWatcher{c: api.NewClient(sock), say: func(msg string) {
		mu.Lock()
		said = append(said, msg)
		mu.Unlock()
		cancel()
	}}
	done := make(chan struct{})
	go func() { w.follow(ctx, func(*api.CardsDelta) {}); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the console said nothing of a gateway that answers with an error")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(said) == 0 || strings.ContainsAny(strings.Join(said, ""), "\x1b\x07") || !strings.Contains(said[0], "refused") {
		t.Fatalf("the console said %q", said)
	}
}
