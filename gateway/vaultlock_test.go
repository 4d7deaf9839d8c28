package gateway

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/vault"
	"github.com/postern/postern/sshagent"
)

// Before a lock wipes the vault's key it seals the audit log's latest
// anchor into the vault, which waits for any unlock or vault change in
// progress: a program that sends a passphrase holds the vault for its
// derivation. The keys must stop signing as soon as the lock is asked
// for, not once that wait is over.
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
	pub := unlockOne(t, s, keys, pass).Key

	// As an unlock or a vault change under way does.
	s.unlockMu.Lock()
	locked := make(chan error, 1)
	go func() { locked <- s.Lock(nil) }()
	<-waiting

	id, err := keys.Lookup(pub)
	if err == nil {
		var sig any
		sig, err = keys.SignSince(keys.Locks(), id, []byte("data"), 0)
		if err == nil {
			t.Errorf("signed %T after the lock was asked for, before it returned", sig)
		}
	}
	if err != nil && !errors.Is(err, sshagent.ErrLocked) {
		t.Errorf("sign after the lock was asked for: %v, want ErrLocked", err)
	}
	s.unlockMu.Unlock()
	if err := <-locked; err != nil {
		t.Fatal(err)
	}
	if st, _ := s.State(); st != api.VaultLocked {
		t.Fatalf("state %v after the lock", st)
	}
}

// A gateway locked while it had a vault is unlocked only by the vault's
// passphrase. A program of the user that moves the vault file away must
// not leave it locked with no password at all, which any ssh-add -X
// would then lift, making usable again the keys added with ssh-add that
// the person locked away: locked at start, locked by the person, or
// locked as the file went and then locked by the person ("already
// locked").
func TestVaultMovedAwayWhileLockedUnlocksWithNothing(t *testing.T) {
	pass := []byte("lock pass")
	for _, c := range []struct {
		name string
		lock func(t *testing.T, s *vaultState, move func())
	}{
		{"locked at start", func(t *testing.T, s *vaultState, move func()) {
			move()
		}},
		{"locked by the person", func(t *testing.T, s *vaultState, move func()) {
			if err := s.Unlock(pass); err != nil {
				t.Fatal(err)
			}
			if err := s.Lock(nil); err != nil {
				t.Fatal(err)
			}
			move()
		}},
		{"locked as the file went", func(t *testing.T, s *vaultState, move func()) {
			if err := s.Unlock(pass); err != nil {
				t.Fatal(err)
			}
			move()
			if err := s.Lock(nil); !errors.Is(err, errAlreadyLocked) {
				t.Fatalf("the person's lock: %v, want already locked", err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, keys, path := newVaultStateWithKey(t, pass, "vaulted")
			s.start()
			move := func() {
				if err := os.Rename(path, path+".aside"); err != nil {
					t.Fatal(err)
				}
				s.fileChanged()
			}
			c.lock(t, s, move)
			if st, _ := s.State(); st != api.VaultLocked {
				t.Fatalf("state %v once the vault was moved away", st)
			}
			if err := s.Unlock([]byte("anything")); err == nil {
				t.Fatal("an unlock with any password succeeded once the vault was moved away")
			}
			if st, _ := s.State(); st != api.VaultLocked || !keys.Locked() {
				t.Fatalf("state %v, keyring locked %v after the refused unlock", st, keys.Locked())
			}
			// The vault put back: its passphrase unlocks it, at once,
			// before the watch of the file has told the gateway (its
			// event comes when it comes: "mv" then "postern unlock"
			// raced it).
			if err := os.Rename(path+".aside", path); err != nil {
				t.Fatal(err)
			}
			if err := s.UnlockCommand(context.Background(), pass, true, func() error { return nil }); err != nil {
				t.Fatalf("unlock with the passphrase once the vault is back: %v", err)
			}
		})
	}
}

// The right passphrase given to a vault change (vault add, remove,
// passwd) ends the wrong-passphrase delays as an unlock's does: the
// person's next mistake waits a second, not the delay that earlier
// mistakes built up.
func TestVaultChangeWithTheRightPassphraseEndsTheDelays(t *testing.T) {
	pass := []byte("right passphrase")
	s, _, _ := newVaultStateWithKey(t, pass, "k")
	unchanged := func(*vault.Vault) error { return nil }
	if err := s.Change(context.Background(), []byte("wrong"), true, unchanged); !errors.Is(err, vault.ErrWrongPassphrase) {
		t.Fatalf("a wrong passphrase: %v", err)
	}
	if err := s.Change(context.Background(), pass, true, unchanged); err != nil {
		t.Fatal(err)
	}
	n := s.guesses.failures()
	if n != 0 {
		t.Fatalf("after a change with the right passphrase, %d failures still count toward the next delay", n)
	}
}

// A lock wipes the vault's decrypted keys, not only hides them: with the
// keyring's own lock lifted behind the vault's back, none of them is
// listed, and the one looked up before the lock signs nothing.
func TestLockWipesTheVaultsKeys(t *testing.T) {
	pass := []byte("lock pass")
	s, keys, _ := newVaultStateWithKey(t, pass, "signer")
	s.start()
	id := unlockOne(t, s, keys, pass)
	if err := s.Lock(nil); err != nil {
		t.Fatal(err)
	}
	keys.SetLocked(false)
	if left, err := keys.Identities(); err != nil || len(left) != 0 {
		t.Errorf("after the lock the keyring holds %d identities (%v), want none", len(left), err)
	}
	if sig, err := keys.SignSince(keys.Locks(), id, []byte("data"), 0); err == nil {
		t.Errorf("the vault's key signed (%s) after the lock: its key material was kept", sig.Format)
	}
}

// unlockOne unlocks s with pass and returns the one identity its vault
// gives keys.
func unlockOne(t *testing.T, s *vaultState, keys *sshagent.Keyring, pass []byte) *sshagent.Identity {
	t.Helper()
	if err := s.Unlock(pass); err != nil {
		t.Fatal(err)
	}
	ids, err := keys.Identities()
	if err != nil || len(ids) != 1 {
		t.Fatalf("identities %v, %v", ids, err)
	}
	return ids[0]
}
