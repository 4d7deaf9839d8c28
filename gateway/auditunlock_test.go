package gateway

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/postern/postern/gateway/api"
)

// While the audit log cannot be written, an unlock, which raises
// authority and is announced by vault_unlocked, is refused, as every
// action whose event the log refuses is; a lock, which lowers it, still
// happens.
func TestUnlockIsRefusedWhileTheAuditLogFails(t *testing.T) {
	first := auditRetryFirst
	auditRetryFirst = time.Hour // the log stays failing for the test
	t.Cleanup(func() { auditRetryFirst = first })
	pass := []byte("failing pass")
	var vaultPath string
	g, sock := startGatewayWith(t, func(string) { vaultPath = initTestVault(t, pass) })
	logPath := filepath.Join(filepath.Dir(vaultPath), "audit.log")
	c := api.NewClient(sock)
	ctx := context.Background()
	st0, err := c.Status(ctx)
	if err != nil || st0.Vault.State != api.VaultLocked {
		t.Fatalf("status at start: %+v, %v", st0, err)
	}

	al := g.currentAudit()
	failAuditLog(t, al, logPath)
	if al.status().Failing == "" {
		t.Fatal("the log is not failing")
	}

	err = c.Unlock(ctx, api.UnlockArgs{Passphrase: bytes.Clone(pass)})
	st, serr := c.Status(ctx)
	if serr != nil {
		t.Fatal(serr)
	}
	if err == nil || st.Vault.State != api.VaultLocked {
		t.Fatalf("unlocked while the audit log cannot record it: %v, vault %s", err, st.Vault.State)
	}
	if !strings.Contains(err.Error(), "audit log") {
		t.Fatalf("the refused unlock does not say the audit log could not record it: %v", err)
	}

	// The keys were loaded, and the vault locked again, though the log
	// recorded neither: the lock is not refused.
	if st.Vault.Epoch != st0.Vault.Epoch+2 {
		t.Fatalf("vault epoch %d after the refused unlock, from %d: want the unlock and the lock after it", st.Vault.Epoch, st0.Vault.Epoch)
	}
}
