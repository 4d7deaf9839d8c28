package gateway

import (
	"context"
	"errors"
	"testing"

	"github.com/postern/postern/internal/atomicfile"
	"github.com/postern/postern/internal/vault"
)

// A vault change whose file was written but whose directory could not
// be synced (atomicfile.ErrNotDurable) did change the file: the gateway
// takes it in as it takes in any change it makes, where it went on
// serving the keys from before it. A key removed so stopped signing only
// at the next change of the file or the next lock, and after a new
// passphrase the gateway kept a data key that no longer opened its vault.
func TestChangeWrittenButNotDurableIsTakenIn(t *testing.T) {
	pass := []byte("durable pass")
	s, keys, _ := newVaultStateWithKey(t, pass, "removed")
	s.start()
	unlockOne(t, s, keys, pass)

	syncFailed := errors.New("input/output error")
	restore := atomicfile.SetSyncDirForTest(func(string) error { return syncFailed })
	err := s.Change(context.Background(), pass, true, func(v *vault.Vault) error {
		if err := v.RemoveKey("removed"); err != nil {
			return err
		}
		return v.Save()
	})
	restore()
	if !errors.Is(err, atomicfile.ErrNotDurable) {
		t.Fatalf("the change: %v, want the directory sync's failure", err)
	}
	if ids, err := keys.Identities(); err != nil || len(ids) != 0 {
		t.Fatalf("the key removed from the file written still signs: %d identities, %v", len(ids), err)
	}

	// A new passphrase, written the same way: the gateway keeps the data
	// key that opens the file now.
	if err := s.Change(context.Background(), pass, true, func(v *vault.Vault) error {
		restore := atomicfile.SetSyncDirForTest(func(string) error { return syncFailed })
		defer restore()
		return v.ChangePassphrase([]byte("new pass"), vault.FloorParams())
	}); !errors.Is(err, atomicfile.ErrNotDurable) {
		t.Fatalf("the new passphrase: %v, want the directory sync's failure", err)
	}
	if err := s.Read(func(*vault.Vault) error { return nil }); err != nil {
		t.Fatalf("the vault read with the data key the gateway kept: %v", err)
	}

	// The gateway's own seal of a secret (the audit anchor), written the
	// same way, is no change of the file for the epoch either.
	_, epoch := s.State()
	restore = atomicfile.SetSyncDirForTest(func(string) error { return syncFailed })
	sealed, err := s.sealSecret("anchor", []byte("the latest anchor"))
	restore()
	if !sealed || !errors.Is(err, atomicfile.ErrNotDurable) {
		t.Fatalf("the seal: %v, %v", sealed, err)
	}
	s.fileChanged() // as the watcher does, seeing the file written
	if _, now := s.State(); now != epoch {
		t.Fatalf("the gateway's own seal moved the epoch from %d to %d", epoch, now)
	}
}
