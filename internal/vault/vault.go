package vault

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
)

// Vault is an unlocked vault: the decrypted keys and secrets of one file,
// and what is needed to write it back. Its methods are safe for concurrent
// use. Changes stay in memory until Save.
type Vault struct {
	mu sync.Mutex

	path string
	hdr  header
	aad  []byte // header as last read or written
	wrap []byte // wrapped data key as last read or written
	kek  []byte // key-encryption key; nil when opened with a DataKey
	dek  []byte // data-encryption key

	keys       []Key
	secrets    map[string][]byte
	generation uint64

	disk  [sha256.Size]byte // SHA-256 of the file as last read or written
	wiped bool
}

// Create makes a new vault at path, sealed with passphrase under the KDF
// parameters p (FloorParams or Calibrate), holding the public metadata
// meta and the named secrets (both may be nil), and no keys. It fails
// with ErrExist if anything exists at path, and creates the parent
// directory (0700) if needed. The arguments are copied; the caller keeps
// and clears its own passphrase and secrets. In the rare case where the
// file was written but the final directory sync failed, Create returns
// the Vault together with the error.
func Create(path string, passphrase []byte, p Params, meta map[string]string, secrets map[string][]byte) (*Vault, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("create vault: %w", err)
	}
	if len(passphrase) == 0 {
		return nil, errors.New("create vault: the passphrase is empty")
	}
	if err := validateMeta(meta); err != nil {
		return nil, fmt.Errorf("create vault: %w", err)
	}
	for name := range secrets {
		if err := validateSecretName(name); err != nil {
			return nil, fmt.Errorf("create vault: %w", err)
		}
	}
	if err := refuseExisting(path); err != nil {
		return nil, err // before the slow derivation
	}

	v := &Vault{
		path:    path,
		hdr:     header{params: p, meta: maps.Clone(meta)},
		dek:     randomBytes(keySize),
		secrets: make(map[string][]byte, len(secrets)),
	}
	if v.hdr.meta == nil {
		v.hdr.meta = map[string]string{}
	}
	copy(v.hdr.salt[:], randomBytes(saltSize))
	copy(v.hdr.id[:], randomBytes(idSize))
	for name, s := range secrets {
		v.secrets[name] = slices.Clone(s)
	}
	v.kek = deriveKEK(passphrase, v.hdr.salt[:], p)
	v.hdr = withKDFCheck(v.hdr)

	data, aad, wrap, err := v.encode(v.hdr, v.kek, v.dek, nil, 0)
	if err != nil {
		v.Wipe()
		return nil, fmt.Errorf("create vault: %w", err)
	}
	written, err := writeNew(path, data)
	if !written {
		v.Wipe()
		return nil, err
	}
	v.aad, v.wrap, v.disk = aad, wrap, sha256.Sum256(data)
	raiseAnchor(path, v.hdr.id, 0) // best effort: the next save writes it again
	return v, err                  // err: written, but the directory sync failed
}

// Open unlocks the vault at path with passphrase. Errors: ErrNotExist,
// ErrWrongPassphrase (the file is intact but the passphrase is wrong; the
// caller waits WrongPassphraseDelay before the next try), ErrCorrupt
// (damaged or edited; the message says what). Open takes one Argon2id
// derivation with the parameters in the header.
func Open(path string, passphrase []byte) (*Vault, error) {
	anchor := anchorBefore(path)
	data, fp, err := readVault(path)
	if err != nil {
		return nil, err
	}
	if err := checkKDF(&fp.hdr); err != nil {
		return nil, withPath(err, path)
	}
	if len(passphrase) == 0 {
		return nil, fmt.Errorf("unlock vault %s: %w", path, ErrWrongPassphrase)
	}
	kek := deriveKEK(passphrase, fp.hdr.salt[:], fp.hdr.params)
	dek, err := unwrapKey(kek, fp)
	switch {
	case errors.Is(err, errWrongKEK):
		clear(kek)
		return nil, fmt.Errorf("unlock vault %s: %w", path, ErrWrongPassphrase)
	case err != nil:
		clear(kek)
		return nil, withPath(err, path)
	}
	v, err := finishOpen(path, anchor, data, fp, kek, dek)
	if err != nil {
		clear(kek)
		clear(dek)
		return nil, err
	}
	return v, nil
}

// OpenWithKey reopens the vault at path with a DataKey kept from an
// earlier unlock (Vault.DataKey), without the passphrase: this is how a
// running gateway reloads the vault after another command changed it.
// It fails with ErrStaleKey when the key does not open the file (another
// vault, or the passphrase was changed since, which rotates the data
// key). A vault opened this way can be saved, but its metadata cannot be
// changed (SetMeta needs the passphrase). The DataKey is copied, not
// consumed.
func OpenWithKey(path string, key *DataKey) (*Vault, error) {
	if !key.usable() {
		return nil, errors.New("open vault: the data key was wiped")
	}
	anchor := anchorBefore(path)
	data, fp, err := readVault(path)
	if err != nil {
		return nil, err
	}
	if fp.hdr.id != key.id {
		return nil, &pathError{
			msg: fmt.Sprintf("data key belongs to vault %x but %s is vault %x; unlock it with its passphrase", key.id, path, fp.hdr.id),
			err: ErrStaleKey,
		}
	}
	dek := slices.Clone(key.key)
	v, err := finishOpen(path, anchor, data, fp, nil, dek)
	if err != nil {
		clear(dek)
		return nil, err
	}
	return v, nil
}

func finishOpen(path string, anchor anchorState, data []byte, fp *fileParts, kek, dek []byte) (*Vault, error) {
	b, err := openBody(dek, fp)
	switch {
	case errors.Is(err, errBodyAuth) && kek == nil:
		return nil, &pathError{
			msg: fmt.Sprintf("data key does not open vault %s (its passphrase was changed, or the file is damaged); unlock it with the passphrase", path),
			err: ErrStaleKey,
		}
	case errors.Is(err, errBodyAuth):
		return nil, &corruptError{path: path, reason: "the encrypted contents fail authentication"}
	case err != nil:
		return nil, withPath(err, path)
	}
	if err := anchor.check(path, fp.hdr.id, b.generation); err != nil {
		wipeBody(b)
		return nil, err
	}
	return &Vault{
		path:       path,
		hdr:        fp.hdr,
		aad:        slices.Clone(fp.aad),
		wrap:       slices.Clone(fp.wrap),
		kek:        kek,
		dek:        dek,
		keys:       b.keys,
		secrets:    b.secrets,
		generation: b.generation,
		disk:       sha256.Sum256(data),
	}, nil
}

// Save writes the vault back to its file, atomically (temporary file,
// fsync, rename, directory fsync) and under the sibling lock file
// PATH.lock. It refuses with ErrModified if the file on disk is no longer
// the one this Vault read or last wrote, so a concurrent change is never
// silently overwritten; the caller opens the vault again and redoes the
// change. The body is sealed under a fresh nonce; the generation counter
// goes up by one.
func (v *Vault) Save() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.wiped {
		return ErrWiped
	}
	gen := v.generation + 1
	hdr := v.hdr
	if v.kek != nil {
		hdr = withKDFCheck(hdr) // a vault from before the check gets it
	}
	data, aad, wrap, err := v.encode(hdr, v.kek, v.dek, v.wrap, gen)
	if err != nil {
		return fmt.Errorf("save vault: %w", err)
	}
	renamed, err := v.replace(data)
	if renamed {
		v.hdr, v.aad, v.wrap, v.generation, v.disk = hdr, aad, wrap, gen, sha256.Sum256(data)
		raiseAnchor(v.path, v.hdr.id, gen) // best effort: see anchor.go
	}
	return err
}

// ChangePassphrase re-seals the vault under newPassphrase with the KDF
// parameters p (at least FloorParams) and writes it, with any unsaved
// changes, as Save does. It draws a new salt and also a new data key, so
// DataKeys taken before (a running gateway's, the keychain's) no longer
// open the vault: take a new one with DataKey. On error nothing changes,
// in memory or on disk.
func (v *Vault) ChangePassphrase(newPassphrase []byte, p Params) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("change passphrase: %w", err)
	}
	if len(newPassphrase) == 0 {
		return errors.New("change passphrase: the new passphrase is empty")
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.wiped {
		return ErrWiped
	}
	hdr := v.hdr
	hdr.params = p
	copy(hdr.salt[:], randomBytes(saltSize))
	hdr = withKDFCheck(hdr)
	kek := deriveKEK(newPassphrase, hdr.salt[:], p)
	dek := randomBytes(keySize)
	gen := v.generation + 1
	data, aad, wrap, err := v.encode(hdr, kek, dek, nil, gen)
	if err == nil {
		var renamed bool
		renamed, err = v.replace(data)
		if renamed {
			clear(v.kek)
			clear(v.dek)
			v.hdr, v.kek, v.dek = hdr, kek, dek
			v.aad, v.wrap, v.generation, v.disk = aad, wrap, gen, sha256.Sum256(data)
			raiseAnchor(v.path, v.hdr.id, gen)
			return err
		}
	}
	clear(kek)
	clear(dek)
	return fmt.Errorf("change passphrase: %w", err)
}

// Wipe zeroes every decrypted byte the Vault holds (keys, secrets, the
// data and key-encryption keys) and makes it unusable; later calls return
// ErrWiped or empty results. Copies handed out earlier (Keys, Secret,
// DataKey) are the caller's to wipe.
func (v *Vault) Wipe() {
	v.mu.Lock()
	defer v.mu.Unlock()
	wipeBody(&body{keys: v.keys, secrets: v.secrets})
	clear(v.kek)
	clear(v.dek)
	v.kek, v.dek, v.keys, v.secrets = nil, nil, nil, nil
	v.wiped = true
}

// Path returns the vault's file.
func (v *Vault) Path() string { return v.path }

// ID returns the vault's random 16-byte identifier (also in the header).
func (v *Vault) ID() [16]byte { return v.hdr.id }

// Params returns the KDF parameters the vault is sealed with.
func (v *Vault) Params() Params {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.hdr.params
}

// Generation returns the save counter from the authenticated body: 0 for
// a new vault, one more for each Save or ChangePassphrase. A reader that
// remembers it can notice a vault file rolled back to an older copy.
func (v *Vault) Generation() uint64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.generation
}

// DataKey returns a copy of the vault's data key, for OpenWithKey or the
// OS keychain. The caller wipes it.
func (v *Vault) DataKey() (*DataKey, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.wiped {
		return nil, ErrWiped
	}
	return &DataKey{id: v.hdr.id, key: slices.Clone(v.dek)}, nil
}
