package gateway

// The vault file as the gateway follows it: changes made through the
// gateway (Change) and on disk (fileChanged), reads with the kept data key
// (Read), and the generation that refuses an older copy put back.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/vault"
	"github.com/postern/postern/sshagent"
)

// fileStamp tells one version of the vault file from another, as the
// watcher sees it.
type fileStamp struct {
	ino   uint64
	size  int64
	mtime time.Time
}

// stampOf returns the file at path's stamp, and whether it exists.
func stampOf(path string) (fileStamp, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, false
	}
	return fileStamp{ino: inode(fi), size: fi.Size(), mtime: fi.ModTime()}, true
}

// refuseOlder refuses v when this gateway has seen a later generation of
// the same vault, locked or not: an older copy put back in place (with
// the anchor beside it removed) would bring back removed keys and an
// older sealed configuration. The caller holds s.mu.
func (s *vaultState) refuseOlder(v *vault.Vault) error {
	if s.genKnown && v.ID() == s.genID && v.Generation() < s.gen {
		return fmt.Errorf("%w: %s is at generation %d, but this gateway has read generation %d of it; if you put that copy back on purpose, restart the gateway",
			vault.ErrRolledBack, s.path, v.Generation(), s.gen)
	}
	return nil
}

// seen records v's generation as the latest read, and the KDF
// parameters it is sealed with; the caller holds s.mu.
func (s *vaultState) seen(v *vault.Vault) {
	s.gen, s.genID, s.genKnown = v.Generation(), v.ID(), true
	s.kdf = v.Params()
}

// refuseForeignKDF refuses, before any derivation, to unlock a vault
// whose header names other KDF parameters than the vault this gateway
// last opened was sealed with: the gateway makes every change of the
// passphrase itself while it runs (Change), so another program rewrote
// the header, and no passphrase opens it then (the key derived would not
// be the one the data key is wrapped with). Raised to the ceiling (1 GiB,
// 32 passes) they made each unlock take that derivation and then say
// "wrong passphrase", for the person to try again. The vault's id is in
// the header too, and a program may change it with the parameters: a
// header with another id (a new vault put in place, as vault init does)
// is refused only when its derivation would cost more than twice the
// last one's, which a vault made on this machine does not.
func (s *vaultState) refuseForeignKDF() error {
	s.mu.Lock()
	known, id, want := s.genKnown, s.genID, s.kdf
	s.mu.Unlock()
	if !known {
		return nil
	}
	p, fileID, err := vault.ReadParams(s.path)
	switch {
	case err != nil:
		return nil // Open says what is wrong with the file
	case fileID == id && p != want:
		return fmt.Errorf("%w: the key derivation parameters in its header (%s) are not those this gateway last opened it with (%s): a program rewrote the header, and no passphrase opens the vault so; nothing was derived. Put the vault back from a backup; if you changed its passphrase yourself, by a command that did not go through this gateway, restart the gateway",
			vault.ErrCorrupt, paramsText(p), paramsText(want))
	case fileID != id && kdfCost(p) > 2*kdfCost(want):
		return fmt.Errorf("%w: the vault's header names another vault, whose key derivation (%s) would cost more than twice that of the vault this gateway last opened (%s); nothing was derived. If you put a new vault there yourself, restart the gateway",
			vault.ErrCorrupt, paramsText(p), paramsText(want))
	}
	return nil
}

// kdfCost is what a derivation with p costs, in passes times memory.
func kdfCost(p vault.Params) uint64 { return uint64(p.Time) * uint64(p.Memory) }

// paramsText names KDF parameters for a person.
func paramsText(p vault.Params) string {
	return fmt.Sprintf("%d passes over %d MiB, %d lanes", p.Time, p.Memory>>10, p.Threads)
}

// Change opens the vault with passphrase and lets change write it, then
// takes the new file in at once, as fileChanged would: an unlocked
// gateway reloads its keys, with the new data key after a passphrase
// change. A wrong passphrase counts and waits as an unlock's does, in
// the lane person names (guessLanes), and the right one ends the delays
// as an unlock's does; a change whose caller is gone (ctx) before its
// turn is not made.
func (s *vaultState) Change(ctx context.Context, passphrase []byte, person bool, change func(*vault.Vault) error) error {
	return s.guesses.try(ctx, person, func() error { return s.change(passphrase, change) })
}

func (s *vaultState) change(passphrase []byte, change func(*vault.Vault) error) error {
	s.unlockMu.Lock()
	defer s.unlockMu.Unlock()
	if err := s.refuseForeignKDF(); err != nil {
		return err
	}
	v, err := vault.Open(s.path, passphrase)
	// At the end: a new passphrase's derivation comes within change.
	defer s.afterDerivation()
	switch {
	case errors.Is(err, vault.ErrWrongPassphrase):
		return vault.ErrWrongPassphrase
	case err != nil:
		return err
	}
	defer v.Wipe()
	// The file watcher leaves the file to this change until it is taken
	// in below: with a new passphrase, the file it would see is sealed
	// with a data key the gateway does not hold yet.
	s.mu.Lock()
	s.guesses.reset() // the right passphrase, as an unlock's ends the delays
	if err := s.refuseOlder(v); err != nil {
		s.mu.Unlock()
		return err
	}
	s.changing = true
	s.mu.Unlock()
	err = change(v)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.changing = false
	if err != nil && !vault.Written(err) {
		return err
	}
	// The file holds the change, also when only the sync that makes it
	// durable failed (err says so): it is taken in either way.
	s.seen(v)
	if s.dk != nil {
		if dk, err := v.DataKey(); err == nil {
			s.dk.Wipe()
			s.dk = dk
		}
	}
	s.fileChangedLocked()
	return err
}

// fileChanged reacts to a change of the vault file on disk: a new vault
// locks the agent, a changed one is reloaded with the data key the
// gateway kept (or locks when that is no longer possible), a removed one
// locks. Every real change bumps the epoch.
func (s *vaultState) fileChanged() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changing {
		return // Change takes the file in itself
	}
	s.fileChangedLocked()
}

// An unlock calls it too, with the file as it is at that moment: the
// watch's event for a vault file put back may come after the unlock that
// follows, which would otherwise be refused as if the file were still
// gone (errVaultGone). s.mu held.
func (s *vaultState) fileChangedLocked() {
	stamp, present := stampOf(s.path)
	if present == s.present && stamp == s.stamp {
		return
	}
	s.stamp = stamp
	wasPresent := s.present
	s.present = present
	switch {
	case !present:
		if !s.locked {
			s.lockLocked(nil, audit.ReasonVaultFileRemoved)
			s.vaultLock = true // the gateway was unlocked with the vault
		} else {
			s.bump(audit.ReasonVaultFileRemoved)
		}
	case !wasPresent:
		if !s.locked {
			s.lockLocked(nil, audit.ReasonVaultFileCreated)
		} else {
			s.bump(audit.ReasonVaultFileCreated)
		}
	case s.locked:
		s.bump(audit.ReasonVaultFileChanged)
	default:
		v, err := vault.OpenWithKey(s.path, s.dk)
		var ids []*sshagent.Identity
		if err == nil {
			// An older copy put back in place is not a change any
			// postern command makes.
			if err = s.refuseOlder(v); err == nil {
				s.seen(v)
				ids, err = identities(v)
			}
			v.Wipe()
		}
		if err != nil {
			s.log("vault file changed and cannot be reloaded; locking", "err", err)
			s.lockLocked(nil, audit.ReasonVaultFileChanged)
			return
		}
		s.keys.ReplaceVault(ids)
		s.bump(audit.ReasonVaultFileChanged)
	}
}

// Read lets read look at the vault, opened again with the data key kept
// while it is unlocked (no passphrase, no key derivation): errNoVault
// without a vault file, errVaultLocked while locked.
func (s *vaultState) Read(read func(*vault.Vault) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case !s.present:
		return errNoVault
	case s.locked || s.dk == nil:
		return errVaultLocked
	}
	v, err := vault.OpenWithKey(s.path, s.dk)
	if err != nil {
		return err
	}
	defer v.Wipe()
	if err := s.refuseOlder(v); err != nil {
		return err
	}
	return read(v)
}
