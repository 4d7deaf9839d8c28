package gateway

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/control"
)

// A client the control socket cannot take (every connection of its user
// busy) is told so, not cut off without a word.
func TestControlRefusalSaysWhy(t *testing.T) {
	g, sock := startGateway(t)
	g.limits.control.SetPerUID(1)
	c := api.NewClient(sock)
	ctx := context.Background()
	// The version read here, not with a call (api.Client.Cards follows
	// the cards, on a connection the gateway may not have seen end yet).
	_, version := g.engine.Cards()
	busy := make(chan error, 1)
	go func() {
		// Waits for a change of the cards, busy, for three seconds.
		req := fmt.Sprintf(`{"op":"cards","args":{"wait":true,"version":%d,"wait_for":3000000000}}`, version)
		_, err := control.Exchange(ctx, c.Socket, []byte(req))
		busy <- err
	}()
	for deadline := time.Now().Add(2 * time.Second); g.limits.control.Total() != 1 || g.limits.control.Idle() != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the waiting request was not seen busy")
		}
	}
	_, err := c.Status(ctx)
	if err == nil || !strings.Contains(err.Error(), "too many connections") {
		t.Errorf("status while the user's one control connection is busy: %v", err)
	}
	<-busy
}

// A request longer than the control socket takes is refused with an
// error that says so.
func TestControlRequestTooLong(t *testing.T) {
	_, sock := startGateway(t)
	long := append([]byte(`{"op":"status","args":"`), bytes.Repeat([]byte("x"), control.MaxRequest)...)
	long = append(long, `"}`...)
	_, err := control.Exchange(context.Background(), api.ControlSocket(sock), long)
	if err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("a request of %d bytes: %v", len(long), err)
	}
}
