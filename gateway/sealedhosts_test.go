package gateway

import (
	"bytes"
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

// A program outside every sandbox, with the user's uid, rewrites the host
// inventory while the gateway is stopped: the production host's key now
// has a harmless name and no class, so its cards would read "dev-box"
// and its per-call rule would not ask. The inventory sealed in the vault
// is put back at the unlock (no vault key signs before), the rewritten
// file is kept aside, and status says so.
func TestSealedHostInventory(t *testing.T) {
	pass := []byte("seal pass")
	dir := gatewayHome(t)
	vaultPath := initTestVault(t, pass)
	hostsPath := filepath.Join(filepath.Dir(vaultPath), xdg.HostsFile)
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	sshPub, _ := ssh.NewPublicKey(pub)
	hostKey := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshPub)))
	ctx := context.Background()
	production := "production"

	_, sock, stop := runGateway(t, dir)
	c := api.NewClient(sock)
	// A change while the vault is locked could not be sealed: refused.
	_, err := c.AddHost(ctx, api.HostsAddArgs{Name: "prod-db", Class: &production, Keys: []api.HostKey{{Key: hostKey, Source: "test"}}})
	if !api.HasCode(err, api.CodeLocked) {
		t.Fatalf("a host added while the vault is locked: %v", err)
	}
	unlockGateway(t, sock, pass)
	if _, err := c.AddHost(ctx, api.HostsAddArgs{Name: "prod-db", Class: &production, Keys: []api.HostKey{{Key: hostKey, Source: "test"}}}); err != nil {
		t.Fatal(err)
	}
	sealed, err := os.ReadFile(hostsPath)
	if err != nil {
		t.Fatal(err)
	}
	stop()

	forged, err := inventory.Parse(sealed)
	if err != nil {
		t.Fatal(err)
	}
	forged, err = forged.Without("prod-db")
	if err != nil {
		t.Fatal(err)
	}
	key, _ := inventory.Parse(sealed)
	h, _ := key.Host("prod-db")
	none := ""
	if forged, err = forged.With("dev-box", &none, h.Keys, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := forged.Save(hostsPath); err != nil {
		t.Fatal(err)
	}

	g, sock, _ := runGateway(t, dir)
	if st, _ := g.vault.State(); st != api.VaultLocked {
		t.Fatalf("the vault is %s at start: a key could sign before the sealed inventory is read", st)
	}
	unlockGateway(t, sock, pass)
	hosts, err := api.NewClient(sock).Hosts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(hosts.Hosts) != 1 || hosts.Hosts[0].Name != "prod-db" || hosts.Hosts[0].Class != "production" {
		t.Fatalf("after the unlock the inventory in force is %+v, not the one sealed in the vault", hosts.Hosts)
	}
	if now, _ := os.ReadFile(hostsPath); !bytes.Equal(now, sealed) {
		t.Errorf("the rewritten inventory file was not put back:\n%s", now)
	}
	if aside, err := os.ReadFile(hostsPath + ".rewritten"); err != nil || !bytes.Contains(aside, []byte("dev-box")) {
		t.Errorf("the rewritten file is not kept aside: %v", err)
	}
	if st, err := api.NewClient(sock).Status(ctx); err != nil || !strings.Contains(st.Hosts.Restored, "sealed in the vault") {
		t.Errorf("status does not say the inventory was put back: %+v %v", st.Hosts, err)
	}
}

// A vault from before the inventory was sealed, or a new one, seals the
// inventory in force at its first unlock.
func TestHostInventorySealedAtFirstUnlock(t *testing.T) {
	pass := []byte("seal pass")
	dir := gatewayHome(t)
	vaultPath := initTestVault(t, pass)
	_, sock, _ := runGateway(t, dir)
	unlockGateway(t, sock, pass)
	newSealedReader(t, vaultPath, pass).waitSecret(api.SecretHostInventory, "the host inventory, at the first unlock,", func(got []byte) bool {
		return bytes.HasPrefix(got, []byte(sealedHostsPrefix))
	})
}
