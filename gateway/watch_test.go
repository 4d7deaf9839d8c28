package gateway

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/postern/postern/gateway/api"
)

// The audit log is written beside the vault at every signature; the
// watcher must not wake for it. And it must still see each change to the
// vault file: replaced (twice, so the watch follows the new file),
// removed (the vault locks) and made again.
func TestVaultWatchFollowsTheFileNotTheAuditLog(t *testing.T) {
	sg := startSigningGateway(t)
	g, vaultPath := sg.g, sg.vaultPath
	logPath := g.currentAudit().current().Path()
	if filepath.Dir(logPath) != filepath.Dir(vaultPath) {
		t.Fatalf("the audit log %s is not beside the vault %s: this test proves nothing", logPath, vaultPath)
	}
	// The unlock saves the vault (the sealed configuration, the anchor):
	// let the watcher settle.
	settled := func() uint64 {
		for last := g.watchEvents.Load(); ; {
			time.Sleep(300 * time.Millisecond)
			now := g.watchEvents.Load()
			if now == last {
				return now
			}
			last = now
		}
	}
	before := settled()
	cl := sg.client(t)
	const signs = 40
	size0 := logEnd(t, g)
	for range signs {
		if _, err := cl.Sign(sg.pub, []byte("watched")); err != nil {
			t.Fatal(err)
		}
	}
	if logEnd(t, g) < size0+signs {
		t.Fatalf("the audit log went from record %d to %d after %d signatures", size0, logEnd(t, g), signs)
	}
	if woke := settled() - before; woke != 0 {
		t.Fatalf("the file watcher woke %d times while %d records were written beside the vault", woke, signs)
	}

	waitEpoch := func(what string, after uint64, want api.VaultState) uint64 {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			st, e := g.vault.State()
			if e > after && st == want {
				settled() // the gateway may save the vault after a change: let it
				return e
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the gateway did not see it (vault %s, epoch %d, was %d)", what, st, e, after)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	replace := func() {
		t.Helper()
		b, err := os.ReadFile(vaultPath)
		if err != nil {
			t.Fatal(err)
		}
		tmp := vaultPath + ".new"
		if err := os.WriteFile(tmp, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, vaultPath); err != nil {
			t.Fatal(err)
		}
	}
	_, e := g.vault.State()
	replace()
	e = waitEpoch("the vault file replaced", e, api.VaultUnlocked)
	replace()
	e = waitEpoch("the vault file replaced again", e, api.VaultUnlocked)
	aside := vaultPath + ".aside"
	if err := os.Rename(vaultPath, aside); err != nil {
		t.Fatal(err)
	}
	e = waitEpoch("the vault file removed", e, api.VaultLocked)
	if err := os.Rename(aside, vaultPath); err != nil {
		t.Fatal(err)
	}
	e = waitEpoch("the vault file made again", e, api.VaultLocked)
	// A link put in the vault's place, and pointed elsewhere.
	link := func(n int) {
		t.Helper()
		b, err := os.ReadFile(vaultPath)
		if err != nil {
			t.Fatal(err)
		}
		target := fmt.Sprintf("%s.copy%d", vaultPath, n)
		if err := os.WriteFile(target, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, vaultPath+".link"); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(vaultPath+".link", vaultPath); err != nil {
			t.Fatal(err)
		}
	}
	link(1)
	e = waitEpoch("the vault file replaced by a link", e, api.VaultLocked)
	link(2)
	waitEpoch("the link pointed elsewhere", e, api.VaultLocked)
}

// logEnd returns the seq of the audit log's last durable record.
func logEnd(t *testing.T, g *Gateway) uint64 {
	t.Helper()
	return g.currentAudit().current().Head().Seq
}
