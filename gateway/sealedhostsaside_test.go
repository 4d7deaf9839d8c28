package gateway

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/inventory"
	"github.com/postern/postern/internal/xdg"
)

// Each host inventory file an unlock finds rewritten is kept, under a
// name of its own that status gives: the second one found does not take
// the place of the first, which the person may not have looked at yet.
func TestEveryRewrittenHostInventoryIsKept(t *testing.T) {
	pass := []byte("seal pass")
	dir := gatewayHome(t)
	vaultPath := initTestVault(t, pass)
	hostsPath := filepath.Join(filepath.Dir(vaultPath), xdg.HostsFile)
	ctx := context.Background()
	_, sock, stop := runGateway(t, dir)
	unlockGateway(t, sock, pass)
	if _, err := api.NewClient(sock).AddHost(ctx, api.HostsAddArgs{Name: "prod-db", Keys: []api.HostKey{{Key: hostKeyLine(t), Source: "test"}}}); err != nil {
		t.Fatal(err)
	}
	stop()

	var kept []string
	for _, name := range []string{"first-rewrite", "second-rewrite"} {
		var inv *inventory.Inventory
		k, _, _, _, err := ssh.ParseAuthorizedKey([]byte(hostKeyLine(t)))
		if err != nil {
			t.Fatal(err)
		}
		if inv, err = inv.With(name, nil, []inventory.Key{inventory.NewKey(k, "test", time.Now())}, time.Now()); err != nil {
			t.Fatal(err)
		}
		if err := inv.Save(hostsPath); err != nil {
			t.Fatal(err)
		}
		_, sock, stop := runGateway(t, dir)
		unlockGateway(t, sock, pass)
		st, err := api.NewClient(sock).Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		stop()
		i := strings.Index(st.Hosts.Restored, "kept at ")
		if i < 0 {
			t.Fatalf("status does not say where the rewritten file is kept: %q", st.Hosts.Restored)
		}
		kept = append(kept, st.Hosts.Restored[i+len("kept at "):])
	}
	for i, name := range []string{"first-rewrite", "second-rewrite"} {
		if b, err := os.ReadFile(kept[i]); err != nil || !strings.Contains(string(b), name) {
			t.Errorf("the %s of the host inventory, said kept at %s, is not there (%v; %d bytes there)", name, kept[i], err, len(b))
		}
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
