package gateway

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/postern/postern/gateway/api"
)

// The control socket answers only once the gateway is up, the bastion
// included: a command line that finds the gateway just started never
// hears that the bastion is not enabled when it is.
func TestControlAnswersOnceTheBastionIsUp(t *testing.T) {
	for round := range 5 {
		dir := gatewayHome(t)
		os.WriteFile(configFile(t, dir), []byte(fmt.Sprintf("[bastion]\nenabled = true\nsocket = %q\n", filepath.Join(dir, "b.sock"))), 0o600)
		sock := filepath.Join(dir, "xdg_runtime_dir", "agent.sock")
		g, err := New(Options{Socket: sock})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- g.Run(ctx) }()
		c := api.NewClient(sock)
		for {
			_, err := c.JournalPage(context.Background(), api.JournalArgs{})
			if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, api.ErrNoGateway) {
				continue // not listening yet
			}
			if err != nil {
				t.Fatalf("round %d: the first answer of a gateway with the bastion enabled: %v", round, err)
			}
			break
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
