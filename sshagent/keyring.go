package sshagent

import (
	"bytes"
	"errors"
	"slices"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/internal/expiry"
)

// ErrLocked is returned while the agent is locked: nothing is listed,
// added or signed.
var ErrLocked = errors.New("agent is locked")

// ErrNotFound is returned when a request names a key the agent does not
// hold.
var ErrNotFound = errors.New("key not found")

// ErrVaultKey is returned when ssh-add asks to remove a key that lives in
// the vault: it leaves only when the vault is changed.
var ErrVaultKey = errors.New("key is stored in the vault, not added with ssh-add")

// ErrOtherRun is returned when a run's socket asks to remove a key it did
// not add: a run removes only its own keys, not the person's.
var ErrOtherRun = errors.New("key was not added through this run's socket; a run removes only the keys it added")

// ErrTooManyKeys refuses an add beyond the bounds on added keys.
var ErrTooManyKeys = errors.New("too many keys added")

// The keys added with ssh-add are bounded: each costs the gateway memory
// until it is removed, and every listing carries them all, which a client
// reads only up to 256 KiB (OpenSSH's bound on a reply; past it, ssh
// uses no key of the agent). A run's socket has bounds of its own, so
// that the gated program can neither fill the agent nor make the
// person's listings too long to read.
const (
	MaxAddedKeys    = 1024      // added over every socket together
	maxAddedListing = 160 << 10 // bytes of their keys and comments
	MaxRunKeys      = 32        // added through one run's socket
	maxRunListing   = 16 << 10
)

// A Keyring holds the agent's identities: those added with ssh-add and
// those loaded from the vault. It is safe for concurrent use.
type Keyring struct {
	mu     sync.RWMutex
	ids    []*Identity
	locked bool
	locks  uint64 // how many times the keyring was locked
	asks   uint64 // how many locks were asked for (lockasks.go)
	wipes  uint64 // how many times every added key went (Wipe, the person's RemoveAll)
	// kept are the constraints of added keys by public key, which every
	// copy of the key is used under (kept.go).
	kept      map[string]keptConstraints
	keptBytes int // their keptSize, in all

	// DefaultLifetime applies to added identities that carry no lifetime
	// of their own (postern agent -t).
	DefaultLifetime time.Duration
	// Expired, when set, is given the identities dropped at the end of
	// their lifetime or their certificate's validity (wiped; their public
	// facts remain), outside the keyring's lock.
	Expired func([]*Identity)
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

func (k *Keyring) now() time.Time {
	if k.Now != nil {
		return k.Now()
	}
	return time.Now()
}

// SetLocked locks or unlocks the keyring. A locked keyring lists nothing
// and refuses every use.
func (k *Keyring) SetLocked(locked bool) {
	k.mu.Lock()
	if locked && !k.locked {
		k.locks++
	}
	k.locked = locked
	k.mu.Unlock()
}

// lockState returns whether the keyring is locked and how many times it
// was locked: a signature that waited for a device is dropped when the
// count moved meanwhile, even if the keyring was unlocked again.
func (k *Keyring) lockState() (locked bool, locks uint64) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.locked, k.locks
}

// Locked reports whether the keyring is locked.
func (k *Keyring) Locked() bool {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.locked
}

// Add inserts id, replacing an identity with the same public key (as
// ssh-agent does, so that ssh-add can change a key's constraints).
func (k *Keyring) Add(id *Identity) error { return k.AddRecorded(id, nil) }

// AddRecorded is Add with record (when not nil) called once the add is
// known to succeed, id's lifetime set, and before the key can be used:
// an error from record (its audit event could not be written) refuses
// the add, and id is wiped.
func (k *Keyring) AddRecorded(id *Identity, record func() error) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.addLocked(id, record)
}

// addLocked is AddRecorded; the caller holds k.mu.
func (k *Keyring) addLocked(id *Identity, record func() error) error {
	if k.locked {
		wipe(id.priv)
		return ErrLocked
	}
	if id.Source == Added && id.Expires.IsZero() && k.DefaultLifetime > 0 {
		id.Expires = k.now().Add(k.DefaultLifetime)
	}
	err := k.replaceable(id)
	if err == nil {
		err = k.roomFor(id)
	}
	if err == nil {
		err = k.keepRoom(id)
	}
	if err == nil {
		err = k.arm(id)
	}
	if err != nil {
		wipe(id.priv)
		return err
	}
	if record != nil {
		if err := record(); err != nil {
			id.destroy()
			return err
		}
	}
	if id.Source == Added {
		k.keepLocked(id)
	}
	// A key added again replaces its added copy. A copy the vault holds
	// stays, behind the added one: the added copy (with its constraints)
	// is listed and used, and ssh-add -d removes it alone.
	blob := id.Blob()
	for i, old := range k.ids {
		if !bytes.Equal(old.Blob(), blob) {
			continue
		}
		if old.Source == id.Source {
			old.destroy()
			k.ids[i] = id
			return nil
		}
		k.ids = slices.Insert(k.ids, i, id)
		return nil
	}
	k.ids = append(k.ids, id)
	return nil
}

// ErrCertExpired refuses a certificate whose validity has ended.
var ErrCertExpired = errors.New("certificate has expired")

// arm caps id's lifetime at its certificate's end of validity, refuses a
// certificate that has already expired, and starts the timer that drops
// the identity when its lifetime ends. The caller holds the lock.
func (k *Keyring) arm(id *Identity) error {
	now := k.now()
	if c, ok := id.Key.(*ssh.Certificate); ok && c.ValidBefore != ssh.CertTimeInfinity {
		end := time.Unix(int64(min(c.ValidBefore, 1<<62)), 0)
		if expiry.Passed(now, end) {
			return ErrCertExpired
		}
		if id.Expires.IsZero() || end.Before(id.Expires) {
			id.Expires = end
		}
	}
	if !id.Expires.IsZero() {
		blob := id.Blob()
		id.timer = time.AfterFunc(id.Expires.Sub(now), func() { k.expire(blob) })
	}
	return nil
}

func (k *Keyring) expire(blob []byte) {
	k.mu.Lock()
	now := k.now()
	gone := k.removeLocked(func(id *Identity) bool {
		return bytes.Equal(id.Blob(), blob) && expiry.Passed(now, id.Expires)
	})
	k.mu.Unlock()
	if len(gone) > 0 && k.Expired != nil {
		k.Expired(gone)
	}
}

// removeLocked drops and wipes every identity for which match is true and
// returns them (their public facts remain).
func (k *Keyring) removeLocked(match func(*Identity) bool) []*Identity {
	kept := k.ids[:0]
	var gone []*Identity
	for _, id := range k.ids {
		if match(id) {
			id.destroy()
			gone = append(gone, id)
			continue
		}
		kept = append(kept, id)
	}
	clear(k.ids[len(kept):])
	k.ids = kept
	return gone
}

// Remove deletes the added identity with the given public key, for by:
// the run whose socket asks ("" for the person's sockets), which removes
// only what it added (ErrOtherRun), and returns what it removed. Vault
// identities are not removed: ErrVaultKey.
func (k *Keyring) Remove(key ssh.PublicKey, by string) ([]*Identity, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.locked {
		return nil, ErrLocked
	}
	blob := key.Marshal()
	var inVault, other bool
	gone := k.removeLocked(func(id *Identity) bool {
		switch {
		case !bytes.Equal(id.Blob(), blob):
			return false
		case id.Source == Vault:
			inVault = true
			return false
		case !id.removableBy(by):
			other = true
			return false
		}
		return true
	})
	switch {
	case len(gone) > 0:
		return gone, nil
	case other:
		return nil, ErrOtherRun
	case inVault:
		return nil, ErrVaultKey
	default:
		return nil, ErrNotFound
	}
}

// RemoveProvider deletes the identities whose key a PKCS#11 provider
// holds and returns them; for a run (by, as for Remove), nothing when
// another added any of them (ErrOtherRun).
func (k *Keyring) RemoveProvider(provider, by string) ([]*Identity, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if slices.ContainsFunc(k.ids, func(id *Identity) bool { return ofProvider(id, provider) && !id.removableBy(by) }) {
		return nil, ErrOtherRun
	}
	return k.removeLocked(func(id *Identity) bool { return ofProvider(id, provider) }), nil
}

// HoldsProvider reports whether an identity whose key a PKCS#11
// provider holds is in the keyring.
func (k *Keyring) HoldsProvider(provider string) bool {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return slices.ContainsFunc(k.ids, func(id *Identity) bool { return ofProvider(id, provider) })
}

// ofProvider reports whether id's key is one a PKCS#11 provider holds.
func ofProvider(id *Identity, provider string) bool { return id.sk == nil && id.Provider == provider }

// RemoveAll deletes every added identity that by (as for Remove) may
// remove (for a run, those it added) and returns them. Vault identities
// stay until the vault is locked. The person's (by "") counts as a wipe
// (Wipes): an add under way goes with the rest.
func (k *Keyring) RemoveAll(by string) ([]*Identity, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.locked {
		return nil, ErrLocked
	}
	if by == "" {
		k.wipes++
	}
	return k.removeLocked(func(id *Identity) bool { return id.Source == Added && id.removableBy(by) }), nil
}

// Wipe deletes every added identity, locked or not, and returns them
// (SIGUSR1: the vault's go when it locks).
func (k *Keyring) Wipe() []*Identity {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.wipes++
	return k.removeLocked(func(id *Identity) bool { return id.Source == Added })
}

// ReplaceVault swaps the vault identities for ids (nil to drop them all,
// as when the vault locks), wiping the old key material. An added
// identity with the same public key takes precedence over a vault one.
func (k *Keyring) ReplaceVault(ids []*Identity) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.removeLocked(func(id *Identity) bool { return id.Source == Vault })
	// A vault key that was also added stays behind the added copy (see
	// Add), so that ssh-add -d of the added copy leaves it.
	for _, id := range ids {
		id.Source = Vault
		if k.arm(id) != nil {
			id.destroy()
			continue
		}
		k.ids = append(k.ids, id)
	}
}

// Identities returns the usable identities in the order they were added
// (vault identities after the ones added before the vault was unlocked),
// or ErrLocked.
func (k *Keyring) Identities() ([]*Identity, error) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	if k.locked {
		return nil, ErrLocked
	}
	now := k.now()
	out := make([]*Identity, 0, len(k.ids))
	var seen map[string]bool // the added keys' blobs, once a vault key shows
	for _, id := range k.ids {
		// Its timer, on the monotonic clock, is late after a suspend.
		if expiry.Passed(now, id.Expires) {
			continue
		}
		// A key both added and in the vault is listed once: the copy
		// first in line, the added one.
		if id.Source == Vault {
			if seen == nil {
				seen = map[string]bool{}
				for _, o := range k.ids {
					if o.Source == Added && !expiry.Passed(now, o.Expires) {
						seen[string(o.Blob())] = true
					}
				}
			}
			if seen[string(id.Blob())] {
				continue
			}
		}
		out = append(out, id)
	}
	return out, nil
}

// Lookup finds the usable identity for key: the one with exactly that
// key or certificate, else one holding the same public key with or
// without a certificate. ssh signs for a certificate it read from
// CertificateFile with the plain key the agent holds, and sshd's
// HostKeyAgent asks for a host certificate's key; both are the same
// signature, made by the same private key.
func (k *Keyring) Lookup(key ssh.PublicKey) (*Identity, error) {
	ids, err := k.Identities()
	if err != nil {
		return nil, err
	}
	if id := findKey(ids, key); id != nil {
		return id, nil
	}
	return nil, ErrNotFound
}

// Comments returns the comments of every usable copy of key's public
// key the keyring holds, each once: the added copy's and the vault's
// behind it (Identities lists only the first), a certificate's and the
// plain key's.
func (k *Keyring) Comments(key ssh.PublicKey) []string {
	k.mu.RLock()
	defer k.mu.RUnlock()
	if k.locked {
		return nil
	}
	return commentsOf(k.ids, key, k.now())
}

// commentsOf returns the comments of the identities among ids that hold
// key's public key and, unless now is zero, are not expired at now,
// each once.
func commentsOf(ids []*Identity, key ssh.PublicKey, now time.Time) []string {
	plain := plainKey(key).Marshal()
	var out []string
	for _, id := range ids {
		if !now.IsZero() && expiry.Passed(now, id.Expires) {
			continue
		}
		if bytes.Equal(id.encode().plain, plain) && !slices.Contains(out, id.Comment) {
			out = append(out, id.Comment)
		}
	}
	return out
}

// findKey returns the identity among ids with exactly key, else one with
// the same public key with or without a certificate, else nil.
func findKey(ids []*Identity, key ssh.PublicKey) *Identity {
	blob, plain := key.Marshal(), plainKey(key).Marshal()
	var same *Identity
	for _, id := range ids {
		e := id.encode()
		if bytes.Equal(e.blob, blob) {
			return id
		}
		if same == nil && bytes.Equal(e.plain, plain) {
			same = id
		}
	}
	return same
}
