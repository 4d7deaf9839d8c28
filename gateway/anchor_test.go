package gateway

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/vault"
)

// After the checkpoint an unlock makes, the chain head is written beside
// the log and sealed into the vault; the gateway's own save of the vault
// moves no epoch (a grant would end with it).
func TestAnchorSealedIntoTheVault(t *testing.T) {
	pass := []byte("anchor pass")
	var vaultPath, anchorPath string
	g, sock := startGatewayWith(t, func(dir string) {
		nv, err := api.InitVault(vault.FloorParams(), func() ([]byte, error) { return append([]byte(nil), pass...), nil })
		if err != nil {
			t.Fatal(err)
		}
		vaultPath = nv.Path
		anchorPath = filepath.Join(filepath.Dir(nv.Path), "audit.anchor")
	})
	c := api.NewClient(sock)
	ctx := context.Background()
	if err := c.Unlock(ctx, api.UnlockArgs{Passphrase: append([]byte(nil), pass...)}); err != nil {
		t.Fatal(err)
	}
	_, epoch := g.vault.State()
	// An anchor the keeper took before the unlock is sealed once the
	// unlock is done, and may be followed by the unlock's own checkpoint:
	// wait for the vault and the file to agree on the latest.
	var sealed, file []byte
	for i := 0; ; i++ {
		if v, err := vault.Open(vaultPath, pass); err == nil {
			sealed = v.Secret(api.SecretAuditAnchor)
			v.Wipe()
		}
		file, _ = os.ReadFile(anchorPath)
		a, err := api.ParseAnchor(string(sealed))
		if f, ferr := api.ParseAnchor(string(file)); err == nil && ferr == nil && f == a {
			break
		}
		if i == 400 {
			t.Fatalf("anchor file %q, sealed %q", file, sealed)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // the watcher has seen the save
	if st, e := g.vault.State(); st != api.VaultUnlocked || e != epoch {
		t.Fatalf("after the gateway's own save: %s, epoch %d (was %d)", st, e, epoch)
	}
}
