package gateway

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io/fs"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/vault"
	"github.com/postern/postern/sshagent"
)

// Errors of the vault state machine; wireCode gives each its code.
var (
	errAlreadyLocked = errors.New("already locked")
	errNotLocked     = errors.New("not locked")
	errNoVault       = errors.New("there is no vault to unlock")
	// errVaultGone refuses an unlock of a gateway locked while it had a
	// vault, whose file is gone: only that vault's passphrase unlocks it.
	errVaultGone  = errors.New("the vault file disappeared while the gateway was locked: only the vault's passphrase unlocks it")
	errStaleKey   = errors.New("the keychain holds an old key for this vault (its passphrase changed)")
	errNoPassword = errors.New("postern lock locked the agent without a password: postern unlock unlocks it")
	// errLockedMeanwhile refuses an unlock during which a lock was asked
	// for: the lock, asked for last, wins.
	errLockedMeanwhile = errors.New("a lock was asked for while the vault was being unlocked: the gateway stays locked")
	// errVaultLocked refuses what needs the unlocked vault.
	errVaultLocked = errors.New("the vault is locked")
)

// vaultState is the lock state of the gateway and its vault. Every lock,
// unlock and change of the vault file bumps the epoch; approvals bound to
// an older epoch authorize nothing.
type vaultState struct {
	path  string
	keys  *sshagent.Keyring
	epoch *epochCounter
	log   func(msg string, args ...any)
	// warn, when set, says what went wrong that the gateway goes on
	// through (an epoch not written to its file).
	warn func(msg string, args ...any)

	unlockMu sync.Mutex // serialises unlocks and changes of the vault
	guesses  guessLanes // paces wrong passphrases
	mu       sync.Mutex
	// view is whether the gateway is locked and the epoch, as of the
	// last change (set under mu): read by lockedEpoch without mu, which
	// is held while the vault's keys go into the keyring and the
	// approvals hear of a new epoch, both under locks of their own
	// that a reader of the epoch may hold (an audit record's stamp).
	view     atomic.Pointer[lockedAt]
	locked   bool
	present  bool
	dk       *vault.DataKey // kept while unlocked, to reload a changed file
	gen      uint64         // the vault's generation when last read: it never goes back
	genID    [16]byte       // the vault gen belongs to
	genKnown bool           // gen and genID were read from a vault
	kdf      vault.Params   // the KDF parameters that vault was sealed with
	lockPass []byte         // SHA-256 of the ssh-add -x password, without a vault
	// vaultLock: locked while a vault was there. Only its passphrase
	// unlocks, also once the file is gone (moved away by anyone).
	vaultLock bool
	stamp     fileStamp
	changing  bool // a Change is writing the file
	// onChange is told of each epoch change; an error says its event
	// could not be recorded.
	onChange []func(old, new uint64, why audit.Reason) error
	// checkOpened, if set, may refuse an unlock after the vault opened.
	checkOpened func(*vault.Vault) error
	// beforeLock, if set, runs before Lock wipes the key (the anchor
	// keeper's flush), without the state's locks held.
	beforeLock func()
	// derived, if set, runs once a passphrase's key derivation is over,
	// without the state's locks held: its memory (Argon2id's, 64 MiB or
	// more) is garbage then, and the gateway gives it back (idletrim).
	derived func()
}

// lockedAt is whether the gateway is locked, in an epoch.
type lockedAt struct {
	locked bool
	epoch  uint64
}

// start sets the initial state: locked when a vault file exists.
func (s *vaultState) start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stamp, s.present = stampOf(s.path)
	s.locked = s.present
	s.vaultLock = s.present
	s.keys.SetLocked(s.locked)
	s.view.Store(&lockedAt{s.locked, s.epoch.Get()})
}

// lockedEpoch reports whether the gateway is locked, and the epoch, as
// of the last change. It takes none of the state's locks: the approvals
// and the audit records ask it under locks of their own, which the state
// takes under s.mu.
func (s *vaultState) lockedEpoch() (bool, uint64) {
	if l := s.view.Load(); l != nil {
		return l.locked, l.epoch
	}
	// Before start, when nothing else runs.
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.locked, s.epoch.Get()
}

// State returns the state and epoch.
func (s *vaultState) State() (api.VaultState, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stateLocked(), s.epoch.Get()
}

// NoPassword reports whether the gateway is locked with no vault and no
// password (postern lock without a vault).
func (s *vaultState) NoPassword() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.locked && !s.present && !s.vaultLock && s.lockPass == nil
}

func (s *vaultState) stateLocked() api.VaultState {
	switch {
	case s.locked:
		return api.VaultLocked
	case s.present:
		return api.VaultUnlocked
	}
	return api.VaultNone
}

// bump increments the epoch; the caller holds s.mu. The error says that
// the change could not be recorded.
func (s *vaultState) bump(why audit.Reason) error {
	old := s.epoch.Get()
	n, err := s.epoch.Bump()
	s.view.Store(&lockedAt{s.locked, n})
	s.log("vault epoch changed", "epoch", n, "reason", why)
	if err != nil && s.warn != nil {
		s.warn("the vault epoch could not be written to its file: a restart may count it again", "path", s.epoch.path, "err", err)
	}
	var errs []error
	for _, f := range s.onChange {
		errs = append(errs, f(old, n, why))
	}
	return errors.Join(errs...)
}

// Lock wipes every decrypted key and locks the agent, for ssh-add -x.
// passphrase is its password; it matters only without a vault, where it
// is the password ssh-add -X must give back, an empty one too (as with
// ssh-agent).
func (s *vaultState) Lock(passphrase []byte) error {
	if passphrase == nil {
		passphrase = []byte{}
	}
	return s.lock(passphrase)
}

// LockCommand locks as Lock does, for postern lock: without a vault it
// sets no password, and only postern unlock (UnlockCommand) from outside
// every run lifts it.
func (s *vaultState) LockCommand() error { return s.lock(nil) }

// lock locks; a nil passphrase sets no password.
//
// The keys stop signing at once: beforeLock may wait for an unlock or a
// vault change in progress, and a lock asked for does not wait for it to
// take effect.
func (s *vaultState) lock(passphrase []byte) error {
	s.keys.Lock() // counted: an unlock under way stays locked
	if s.beforeLock != nil {
		s.beforeLock()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.locked {
		return errAlreadyLocked
	}
	s.lockLocked(passphrase, audit.ReasonLock)
	return nil
}

// lockIfOpen locks an unlocked vault, wiping its decrypted keys; without
// a vault it does nothing (the agent is not locked with a password).
func (s *vaultState) lockIfOpen() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.present {
		return
	}
	s.keys.Lock() // counted: an unlock under way stays locked
	if !s.locked {
		s.lockLocked(nil, audit.ReasonLock)
	}
}

func (s *vaultState) lockLocked(passphrase []byte, why audit.Reason) {
	s.keys.ReplaceVault(nil)
	s.keys.SetLocked(true)
	if s.dk != nil {
		s.dk.Wipe()
		s.dk = nil
	}
	s.lockPass = nil
	s.vaultLock = s.present
	if !s.present && passphrase != nil {
		h := sha256.Sum256(passphrase)
		s.lockPass = h[:]
	}
	s.locked = true
	s.bump(why)
}

// Unlock opens the vault with passphrase and loads its keys, for
// ssh-add -X; without a vault it checks the password ssh-add -x locked
// the agent with, and refuses to lift a lock of postern lock, which set
// none. A wrong passphrase is answered after a delay that grows with
// each failure of the callers other than the person (guessLanes).
func (s *vaultState) Unlock(passphrase []byte) error {
	return s.guesses.try(context.Background(), false, func() error { return s.unlock(passphrase, nil) })
}

// UnlockCommand unlocks as Unlock does, for postern unlock, which also
// lifts a lock without a password when outside, which says whether the
// caller stands outside every run, lets it: with no password, where the
// caller stands is the only sign that it is the person. person says
// whether the caller stands outside every run, for the lane its wrong
// passphrases are paced in; an unlock whose caller is gone (ctx) before
// its turn is not made.
func (s *vaultState) UnlockCommand(ctx context.Context, passphrase []byte, person bool, outside func() error) error {
	return s.guesses.try(ctx, person, func() error { return s.unlock(passphrase, outside) })
}

// unlock unlocks; outside is nil for ssh-add -X, which never lifts a
// lock without a password.
func (s *vaultState) unlock(passphrase []byte, outside func() error) error {
	s.unlockMu.Lock()
	defer s.unlockMu.Unlock()
	asks := s.keys.LockAsks()
	s.mu.Lock()
	if !s.locked {
		s.mu.Unlock()
		return errNotLocked
	}
	s.fileChangedLocked()
	present := s.present
	s.mu.Unlock()

	if !present {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.vaultLock {
			return errVaultGone
		}
		if s.lockPass == nil {
			if outside == nil {
				return errNoPassword
			}
			if err := outside(); err != nil {
				return err
			}
		}
		h := sha256.Sum256(passphrase)
		if s.lockPass != nil && subtle.ConstantTimeCompare(h[:], s.lockPass) != 1 {
			return vault.ErrWrongPassphrase
		}
		return s.unlockLocked(nil, nil, asks)
	}

	if err := s.refuseForeignKDF(); err != nil {
		return err
	}
	v, err := vault.Open(s.path, passphrase)
	s.afterDerivation()
	return s.finishUnlock(v, err, asks)
}

// afterDerivation runs derived, once a key was derived from a passphrase
// (whatever came of it): only then, so that a request that derives
// nothing (an unlock of what is not locked) trims nothing.
func (s *vaultState) afterDerivation() {
	if s.derived != nil {
		s.derived()
	}
}

// UnlockWithKey opens the vault with a data key kept in the OS keychain;
// a wrong one is paced as a wrong passphrase is, in the lane person
// names; one whose caller is gone (ctx) before its turn is not made.
func (s *vaultState) UnlockWithKey(ctx context.Context, dk *vault.DataKey, person bool) error {
	return s.guesses.try(ctx, person, func() error { return s.unlockWithKey(dk) })
}

func (s *vaultState) unlockWithKey(dk *vault.DataKey) error {
	s.unlockMu.Lock()
	defer s.unlockMu.Unlock()
	asks := s.keys.LockAsks()
	s.mu.Lock()
	s.fileChangedLocked()
	locked, present, vaultLock := s.locked, s.present, s.vaultLock
	s.mu.Unlock()
	switch {
	case !present && locked && vaultLock:
		return errVaultGone
	case !present:
		return errNoVault
	case !locked:
		return errNotLocked
	}
	v, err := vault.OpenWithKey(s.path, dk)
	if errors.Is(err, vault.ErrStaleKey) {
		return errStaleKey
	}
	return s.finishUnlock(v, err, asks)
}

// finishUnlock loads an opened vault's keys into the agent, for an
// unlock that began when asks locks had been asked for
// (Keyring.LockAsks).
func (s *vaultState) finishUnlock(v *vault.Vault, err error, asks uint64) error {
	if errors.Is(err, vault.ErrWrongPassphrase) {
		return vault.ErrWrongPassphrase
	}
	if errors.Is(err, fs.ErrNotExist) {
		return errVaultGone // it went as the unlock began
	}
	if err != nil {
		return err
	}
	defer v.Wipe()
	// The key derivation took tens of MiB; give them back now rather than
	// when the runtime gets round to it.
	defer debug.FreeOSMemory()
	s.mu.Lock()
	err = s.refuseOlder(v)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	if s.checkOpened != nil {
		if err := s.checkOpened(v); err != nil {
			return err
		}
	}
	warn := s.warn
	if warn == nil {
		warn = s.log
	}
	switch err := v.Anchor(); {
	case errors.Is(err, vault.ErrAnchorDamaged):
		warn("the vault was unlocked without the check that it is no older copy", "err", err)
	case err != nil:
		warn("cannot record the vault's generation beside it", "err", err)
	}
	// The data key first: the keys, decrypted, are then never left
	// unwiped by a failure to take it.
	dk, err := v.DataKey()
	if err != nil {
		return err
	}
	ids, err := identities(v)
	if err != nil {
		dk.Wipe()
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stamp, _ = stampOf(s.path)
	s.seen(v)
	return s.unlockLocked(ids, dk, asks)
}

// unlockLocked unlocks with the vault's keys ids and data key dk (none
// without a vault), unless a lock was asked for since the unlock began
// (asks, Keyring.LockAsks): the keyring is unlocked only if none was, in
// one step with that check. The caller holds s.mu.
func (s *vaultState) unlockLocked(ids []*sshagent.Identity, dk *vault.DataKey, asks uint64) error {
	if !s.keys.UnlockSince(asks) {
		if dk != nil {
			dk.Wipe()
		}
		for _, id := range ids {
			id.Discard()
		}
		return errLockedMeanwhile
	}
	s.guesses.reset()
	s.lockPass = nil
	s.vaultLock = false
	s.dk = dk
	s.keys.ReplaceVault(ids)
	s.locked = false
	if err := s.bump(audit.ReasonUnlock); err != nil {
		// An unlock raises authority: one the audit log could not record
		// does not stand. The lock happens whether or not it is recorded.
		s.lockLocked(nil, audit.ReasonAuditFailed)
		return fmt.Errorf("the vault was locked again: %w", err)
	}
	return nil
}

// identities decrypts the vault's keys into agent identities.
func identities(v *vault.Vault) (ids []*sshagent.Identity, err error) {
	keys := v.Keys()
	defer func() {
		for i := range keys {
			keys[i].Wipe()
		}
		if err != nil { // the keys made before the one that failed
			for _, id := range ids {
				id.Discard()
			}
		}
	}()
	now := time.Now()
	for _, k := range keys {
		certs, err := k.Certificates()
		if err != nil {
			return nil, fmt.Errorf("vault key %q: %w", k.Comment, err)
		}
		// The key, then each certificate still valid, as ssh-add adds a
		// key and the certificate beside it. Each identity decodes its
		// own copy of the private key: one is wiped without the others.
		for _, cert := range append([]*ssh.Certificate{nil}, certs...) {
			if cert != nil && vault.CertExpired(cert, now) {
				continue
			}
			priv, err := k.PrivateKey()
			if err != nil {
				return nil, fmt.Errorf("vault key %q: %w", k.Comment, err)
			}
			id, err := sshagent.NewIdentity(priv, cert, k.Comment)
			if err != nil {
				return nil, fmt.Errorf("vault key %q: %w", k.Comment, err)
			}
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// wipe locks and forgets everything at shutdown.
func (s *vaultState) wipe() {
	s.keys.Lock() // counted: an unlock under way stays locked
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys.ReplaceVault(nil)
	if s.dk != nil {
		s.dk.Wipe()
		s.dk = nil
	}
}
