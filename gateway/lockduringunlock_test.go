package gateway

import (
	"errors"
	"testing"

	"github.com/postern/postern/internal/vault"
	"github.com/postern/postern/sshagent"
)

// A lock asked for while an unlock is under way (its key derivation, its
// checks) waits for the unlock to finish, as it waits to seal the audit
// anchor; the keys must not sign meanwhile, once the unlock is over: the
// lock was asked for after the unlock began, and wins.
func TestLockAskedDuringAnUnlock(t *testing.T) {
	pass := []byte("unlock pass")
	s, keys, _ := startVaultState(t, pass, "signer")
	waiting, release := make(chan struct{}), make(chan struct{})
	locked := make(chan error, 1)
	s.beforeLock = func() {
		close(waiting)
		<-release
	}
	s.checkOpened = func(*vault.Vault) error {
		// The person's postern lock comes while the unlock checks the
		// vault it opened.
		go func() { locked <- s.LockCommand() }()
		<-waiting
		return nil
	}
	unlockErr := s.Unlock(pass)
	ids, err := keys.Identities()
	for _, id := range ids {
		if _, err := keys.SignSince(keys.Locks(), id, []byte("data"), 0); err == nil {
			t.Errorf("the vault's key signed after a lock was asked for (the unlock: %v)", unlockErr)
		}
	}
	if err != nil && !errors.Is(err, sshagent.ErrLocked) {
		t.Errorf("identities: %v", err)
	}
	if !errors.Is(unlockErr, errLockedMeanwhile) {
		t.Errorf("the unlock: %v, want %v", unlockErr, errLockedMeanwhile)
	}
	close(release)
	if err := <-locked; err != nil && !errors.Is(err, errAlreadyLocked) {
		t.Fatalf("the lock: %v", err)
	}
	if locked, _ := s.lockedEpoch(); !locked {
		t.Fatal("unlocked once the lock and the unlock were over")
	}
}
