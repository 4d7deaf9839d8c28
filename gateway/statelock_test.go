package gateway

import (
	"crypto/ed25519"
	"crypto/rand"

	"golang.org/x/crypto/ssh"

	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/inventory"
	"github.com/postern/postern/internal/xdg"
)

// Two gateways started on one state directory (eval "$(postern agent)"
// in two terminals, with no vault yet, so no audit log to hold) would
// each keep the state files in memory and write them over the other's:
// a host one of them added was dropped by the other's next change. The
// second one is refused, saying which directory the first holds.
func TestSecondGatewayOnTheStateDirectoryIsRefused(t *testing.T) {
	dir := gatewayHome(t)
	_, sock1, _ := runGateway(t, dir)
	ready := make(chan struct{})
	g2, err := New(Options{Socket: filepath.Join(dir, "xdg_runtime_dir", "other.sock"), Ready: func() { close(ready) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- g2.Run(ctx) }()
	var runErr error
	select {
	case runErr = <-done:
	case <-ready:
		// It serves: show what it does to the first one's records.
		key := hostKeyLine(t)
		c1, c2 := api.NewClient(sock1), api.NewClient(filepath.Join(dir, "xdg_runtime_dir", "other.sock"))
		if _, err := c1.AddHost(ctx, api.HostsAddArgs{Name: "prod-db-1", Keys: []api.HostKey{{Key: key, Source: "test"}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := c2.AddHost(ctx, api.HostsAddArgs{Name: "web-1", Keys: []api.HostKey{{Key: hostKeyLine(t), Source: "test"}}}); err != nil {
			t.Fatal(err)
		}
		inv, err := inventory.Load(filepath.Join(dir, "xdg_state_home", "postern", xdg.HostsFile))
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		<-done
		t.Fatalf("a second gateway served on the same state directory; the host inventory now holds %d host(s) of the 2 added: %v", inv.Len(), inv.Hosts())
	}
	if runErr == nil || !strings.Contains(runErr.Error(), filepath.Join(dir, "xdg_state_home", "postern")) {
		t.Fatalf("the second gateway: %v; want an error naming the state directory", runErr)
	}
}

// hostKeyLine returns a new host key in authorized_keys form.
func hostKeyLine(t *testing.T) string {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshPub)))
}
