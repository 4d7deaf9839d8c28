package gateway

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/postern/postern/internal/vault"
	"github.com/postern/postern/sshagent"
)

// A program with the user's uid keeps a copy of the vault file, waits for
// the person to remove a key, and while the gateway is locked puts the
// copy back and deletes the generation anchor beside it. The gateway has
// seen the later generation: the next unlock refuses the older copy, as
// a reload while unlocked does, rather than hand the removed key back.
func TestUnlockRefusesAnOlderCopyOfTheVault(t *testing.T) {
	for _, c := range []struct {
		name string
		// unlocked: the key is removed while the gateway is unlocked;
		// otherwise while it is locked.
		unlocked bool
	}{{"removed while unlocked", true}, {"removed while locked", false}} {
		t.Run(c.name, func(t *testing.T) { testUnlockRefusesAnOlderCopy(t, c.unlocked) })
	}
}

func testUnlockRefusesAnOlderCopy(t *testing.T, unlocked bool) {
	pass := []byte("rollback pass")
	s, keys, path := newVaultStateWithKey(t, pass, "removed later")
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	s.start()
	if unlocked {
		if err := s.Unlock(pass); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Change(context.Background(), pass, true, func(v *vault.Vault) error {
		if err := v.RemoveKey("removed later"); err != nil {
			return err
		}
		return v.Save()
	}); err != nil {
		t.Fatal(err)
	}
	if ids, _ := keys.Identities(); len(ids) != 0 {
		t.Fatalf("%d keys after the removal", len(ids))
	}
	if unlocked {
		if err := s.Lock(nil); err != nil {
			t.Fatal(err)
		}
	}

	os.Remove(path + ".generation")
	tmp := filepath.Join(filepath.Dir(path), "copy")
	if err := os.WriteFile(tmp, old, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	s.fileChanged()

	err = s.Unlock(pass)
	ids, _ := keys.Identities()
	if err == nil || len(ids) != 0 {
		t.Fatalf("unlock of the older copy: err %v, %d keys loaded (the removed key is back)", err, len(ids))
	}
	if !errors.Is(err, vault.ErrRolledBack) {
		t.Fatalf("unlock of the older copy: %v, want ErrRolledBack", err)
	}
}

// The same older copy put back while the gateway is unlocked, and the
// audit anchor sealed into the vault before the file watcher reacts: the
// seal must not write the older copy out again as a newer generation,
// which the next unlock would then take in with the removed key.
func TestSealRefusesAnOlderCopyOfTheVault(t *testing.T) {
	pass := []byte("rollback pass")
	s, keys, path := newVaultStateWithKey(t, pass, "removed later")
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	s.start()
	if err := s.Unlock(pass); err != nil {
		t.Fatal(err)
	}
	if err := s.Change(context.Background(), pass, true, func(v *vault.Vault) error {
		if err := v.RemoveKey("removed later"); err != nil {
			return err
		}
		return v.Save()
	}); err != nil {
		t.Fatal(err)
	}

	os.Remove(path + ".generation")
	tmp := filepath.Join(filepath.Dir(path), "copy")
	if err := os.WriteFile(tmp, old, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	_, serr := s.sealSecret("anchor", []byte("the latest anchor"))
	s.fileChanged()
	s.Lock(nil)
	uerr := s.Unlock(pass)

	ids, _ := keys.Identities()
	if len(ids) != 0 {
		t.Fatalf("after the seal (err %v), a lock and an unlock (err %v), %d keys: the removed key is back", serr, uerr, len(ids))
	}
	if !errors.Is(serr, vault.ErrRolledBack) {
		t.Fatalf("seal into the older copy: %v, want ErrRolledBack", serr)
	}
}

// startVaultState is newVaultStateWithKey's state, started (locked).
func startVaultState(t *testing.T, pass []byte, comment string) (*vaultState, *sshagent.Keyring, string) {
	t.Helper()
	s, keys, path := newVaultStateWithKey(t, pass, comment)
	s.start()
	return s, keys, path
}

// newVaultStateWithKey creates a vault with passphrase pass holding one
// Ed25519 key named comment, in a temporary directory, and the gateway's
// vault state over it (not started), with the keyring it loads into.
func newVaultStateWithKey(t *testing.T, pass []byte, comment string) (*vaultState, *sshagent.Keyring, string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "vault")
	v, err := vault.Create(path, pass, vault.FloorParams(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Wipe()
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	k, err := vault.NewKey(priv, comment)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.AddKey(k); err != nil {
		t.Fatal(err)
	}
	if err := v.Save(); err != nil {
		t.Fatal(err)
	}
	keys := &sshagent.Keyring{}
	s := &vaultState{path: path, keys: keys, epoch: loadEpoch(filepath.Join(dir, "epoch")), log: func(string, ...any) {}}
	return s, keys, path
}
