package gateway

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
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
		vaultPath = initTestVault(t, pass)
		anchorPath = filepath.Join(filepath.Dir(vaultPath), "audit.anchor")
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
	vr := newSealedReader(t, vaultPath, pass)
	for i := 0; ; i++ {
		if got := vr.secret(api.SecretAuditAnchor); got != nil {
			sealed = bytes.Clone(got)
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

// A lock that comes while the latest checkpoint's anchor waits to be
// written waits for it, and the vault keeps that anchor: wiping the key
// first left the vault with an older anchor than the log's end.
func TestLockSealsThePendingAnchor(t *testing.T) {
	sg := startSigningGateway(t)
	g, vaultPath, pass := sg.g, sg.vaultPath, sg.pass
	sealed := func() string {
		v, err := vault.Open(vaultPath, pass)
		if err != nil {
			t.Fatal(err)
		}
		defer v.Wipe()
		return strings.TrimSpace(string(v.Secret(api.SecretAuditAnchor)))
	}
	g.anchors.flush() // the unlock's own checkpoint
	before := g.anchors.lastAnchor()

	g.anchors.keepMu.Lock() // the keeper is busy
	if _, err := sg.client(t).Sign(sg.pub, []byte("anchored")); err != nil {
		t.Fatal(err)
	}
	if err := g.currentAudit().Checkpoint(); err != nil {
		t.Fatal(err)
	}
	latest := g.anchors.lastAnchor()
	if latest == before {
		t.Fatal("the checkpoint gave no new anchor")
	}
	locked := make(chan error, 1)
	go func() { locked <- g.vault.Lock(nil) }()
	select {
	case err := <-locked:
		locked <- err // it locked while the anchor waited
	case <-time.After(300 * time.Millisecond):
	}
	g.anchors.keepMu.Unlock()
	if err := <-locked; err != nil {
		t.Fatal(err)
	}
	if got := sealed(); got != latest {
		t.Fatalf("after the lock the vault holds the anchor %q, the log's latest is %q", got, latest)
	}
}
