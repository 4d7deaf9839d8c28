package gateway

import (
	"errors"
	"testing"
	"time"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/vault"
	"github.com/postern/postern/sshagent"
)

// Before a lock wipes the vault's key it seals the audit log's latest
// anchor into the vault, which waits for any unlock or vault change in
// progress: a program that sends a wrong passphrase holds the vault for
// the derivation and the delay that follows (up to 10 s each time). The
// keys must stop signing as soon as the lock is asked for, not once that
// wait is over.
func TestLockStopsSigningWhileItWaitsForTheVault(t *testing.T) {
	pass := []byte("lock pass")
	s, keys, _ := newVaultStateWithKey(t, pass, "signer")

	// As the gateway's anchor keeper does when a checkpoint is pending.
	waiting := make(chan struct{})
	s.beforeLock = func() {
		close(waiting)
		s.sealSecret("anchor", []byte("the latest anchor"))
	}
	s.start()
	if err := s.Unlock(pass); err != nil {
		t.Fatal(err)
	}
	ids, err := keys.Identities()
	if err != nil || len(ids) != 1 {
		t.Fatalf("identities %v, %v", ids, err)
	}
	pub := ids[0].Key

	// A wrong passphrase holds the vault.
	changed := make(chan error, 1)
	go func() {
		changed <- s.Change([]byte("wrong"), func(*vault.Vault) error { return nil })
	}()
	for s.unlockMu.TryLock() {
		s.unlockMu.Unlock()
		time.Sleep(time.Millisecond)
	}
	locked := make(chan error, 1)
	go func() { locked <- s.Lock(nil) }()
	<-waiting

	id, err := keys.Lookup(pub)
	if err == nil {
		var sig any
		sig, err = keys.Sign(id, []byte("data"), 0)
		if err == nil {
			t.Errorf("signed %T after the lock was asked for, before it returned", sig)
		}
	}
	if err != nil && !errors.Is(err, sshagent.ErrLocked) {
		t.Errorf("sign after the lock was asked for: %v, want ErrLocked", err)
	}
	if err := <-locked; err != nil {
		t.Fatal(err)
	}
	if err := <-changed; !errors.Is(err, vault.ErrWrongPassphrase) {
		t.Fatalf("change with a wrong passphrase: %v", err)
	}
	if st, _ := s.State(); st != api.VaultLocked {
		t.Fatalf("state %v after the lock", st)
	}
}
