package vault

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"golang.org/x/crypto/chacha20poly1305"
	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/internal/atomicfile"
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

// lockPath is the sibling lock file that serializes writers of path.
func lockPath(path string) string { return path + ".lock" }

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand, Go 1.24+)
	return b
}

// keyCheck lets Open tell a wrong passphrase (the check differs) from a
// damaged header (the check matches, the unwrap fails). It confirms a
// passphrase guess exactly as the AEAD tag of the wrapped key does, at
// the same Argon2id cost, so it gives an attacker nothing new.
func keyCheck(kek []byte) []byte {
	m := hmac.New(sha256.New, kek)
	m.Write([]byte("postern vault key check v1"))
	return m.Sum(nil)
}

func seal(key, plain, aad []byte, prefix []byte) []byte {
	aead, err := chacha20poly1305.NewX(key)
	if err != nil {
		panic("vault: bad key size") // keys are always keySize
	}
	nonce := randomBytes(nonceSize)
	out := make([]byte, 0, len(prefix)+nonceSize+len(plain)+tagSize)
	out = append(append(out, prefix...), nonce...)
	return aead.Seal(out, nonce, plain, aad)
}

func unseal(key, sealed, aad []byte) ([]byte, error) {
	aead, err := chacha20poly1305.NewX(key)
	if err != nil || len(sealed) < nonceSize+tagSize {
		return nil, errors.New("cannot decrypt")
	}
	return aead.Open(nil, sealed[:nonceSize], sealed[nonceSize:], aad)
}

func wrapKey(kek, dek, aad []byte) []byte {
	return seal(kek, dek, aad, keyCheck(kek))
}

// sealBody encodes and encrypts b; the plaintext is cleared.
func sealBody(dek, aad []byte, b *body) ([]byte, error) {
	plain, err := encodeBody(b)
	if err != nil {
		return nil, err
	}
	defer clear(plain)
	return seal(dek, plain, aad, nil), nil
}

// openRegular opens path for reading, refusing anything but a regular
// file (a FIFO planted at the path would block the reader forever).
func openRegular(path string) (*os.File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return os.Open(path)
}

// readFile reads a vault file, refusing anything that is not a regular
// file or is larger than a vault can be.
func readFile(path string) ([]byte, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, int64(maxFileSize)+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileSize {
		return nil, &corruptError{path: path, reason: fmt.Sprintf("file is larger than any vault can be (%d bytes)", maxFileSize)}
	}
	return data, nil
}

func readVault(path string) ([]byte, *fileParts, error) {
	data, err := readFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, notExist(path)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read vault: %w", err)
	}
	fp, err := parseFile(data)
	if err != nil {
		return nil, nil, withPath(err, path)
	}
	return data, fp, nil
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

	data, aad, wrap, err := v.encode(v.hdr, v.kek, v.dek, nil, 0)
	if err != nil {
		v.Wipe()
		return nil, fmt.Errorf("create vault: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		v.Wipe()
		return nil, fmt.Errorf("create vault: %w", err)
	}
	unlock, err := lockFile(lockPath(path))
	if err != nil {
		v.Wipe()
		return nil, fmt.Errorf("create vault: %w", err)
	}
	defer unlock()
	if err := refuseExisting(path); err != nil {
		v.Wipe()
		return nil, err
	}
	err = atomicfile.Write(path, data, 0o600)
	if err != nil && !errors.Is(err, atomicfile.ErrNotDurable) {
		v.Wipe()
		return nil, fmt.Errorf("create vault: %w", err)
	}
	v.aad, v.wrap, v.disk = aad, wrap, sha256.Sum256(data)
	return v, err // err: written, but the directory sync failed
}

func refuseExisting(path string) error {
	_, err := os.Lstat(path)
	switch {
	case err == nil:
		return &pathError{
			msg: fmt.Sprintf("a file already exists at %s; postern will not overwrite it (move it aside first if it is a vault you no longer need)", path),
			err: ErrExist,
		}
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("create vault: %w", err)
	}
	return nil
}

// Open unlocks the vault at path with passphrase. Errors: ErrNotExist,
// ErrWrongPassphrase (the file is intact but the passphrase is wrong; the
// caller waits WrongPassphraseDelay before the next try), ErrCorrupt
// (damaged or edited; the message says what). Open takes one Argon2id
// derivation with the parameters in the header.
func Open(path string, passphrase []byte) (*Vault, error) {
	data, fp, err := readVault(path)
	if err != nil {
		return nil, err
	}
	if len(passphrase) == 0 {
		return nil, fmt.Errorf("unlock vault %s: %w", path, ErrWrongPassphrase)
	}
	kek := deriveKEK(passphrase, fp.hdr.salt[:], fp.hdr.params)
	if !hmac.Equal(keyCheck(kek), fp.wrap[:checkSize]) {
		clear(kek)
		return nil, fmt.Errorf("unlock vault %s: %w", path, ErrWrongPassphrase)
	}
	dek, err := unseal(kek, fp.wrap[checkSize:], fp.aad)
	if err != nil || len(dek) != keySize {
		clear(kek)
		clear(dek)
		return nil, &corruptError{path: path, reason: "the header does not match the wrapped key (the header was edited)"}
	}
	v, err := finishOpen(path, data, fp, kek, dek)
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
	v, err := finishOpen(path, data, fp, nil, dek)
	if err != nil {
		clear(dek)
		return nil, err
	}
	return v, nil
}

func finishOpen(path string, data []byte, fp *fileParts, kek, dek []byte) (*Vault, error) {
	plain, err := unseal(dek, fp.body, fp.bodyAAD)
	if err != nil {
		if kek == nil {
			return nil, &pathError{
				msg: fmt.Sprintf("data key does not open vault %s (its passphrase was changed, or the file is damaged); unlock it with the passphrase", path),
				err: ErrStaleKey,
			}
		}
		return nil, &corruptError{path: path, reason: "the encrypted contents fail authentication"}
	}
	b, err := decodeBody(plain)
	clear(plain)
	if err != nil {
		return nil, withPath(err, path)
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

// ReadMeta returns the public metadata and the vault ID without the
// passphrase, reading only the header. They are NOT authenticated at this
// point: anyone who can write the file can change them, and only a later
// Open or OpenWithKey detects it. Use them for display and lookup (which
// keychain entry, which audit recipient to expect), never to decide trust.
func ReadMeta(path string) (map[string]string, [16]byte, error) {
	var id [16]byte
	f, err := openRegular(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, id, notExist(path)
	}
	if err != nil {
		return nil, id, fmt.Errorf("read vault: %w", err)
	}
	defer f.Close()
	buf, err := io.ReadAll(io.LimitReader(f, int64(prefixSize+maxHeaderSize)))
	if err != nil {
		return nil, id, fmt.Errorf("read vault: %w", err)
	}
	h, _, err := parsePrefix(buf)
	if err != nil {
		return nil, id, withPath(err, path)
	}
	return h.meta, h.id, nil
}

// encode builds the file for the given header and keys. With kek set the
// data key is wrapped afresh; without it the header must be the one on
// disk and the stored wrap is reused.
func (v *Vault) encode(hdr header, kek, dek, oldWrap []byte, generation uint64) (data, aad, wrap []byte, err error) {
	aad, err = hdr.marshal()
	if err != nil {
		return nil, nil, nil, err
	}
	switch {
	case kek != nil:
		wrap = wrapKey(kek, dek, aad)
	case oldWrap != nil && bytes.Equal(aad, v.aad):
		wrap = oldWrap
	default:
		return nil, nil, nil, errors.New("the header changed but the vault was opened without its passphrase")
	}
	prefix := bodyAAD(aad, wrap)
	sealed, err := sealBody(dek, prefix, &body{generation: generation, keys: v.keys, secrets: v.secrets})
	if err != nil {
		return nil, nil, nil, err
	}
	return assemble(prefix, sealed), aad, wrap, nil
}

// replace writes data over the vault file if the file is still the one
// this Vault read or last wrote. It reports whether the file was
// replaced.
func (v *Vault) replace(data []byte) (bool, error) {
	unlock, err := lockFile(lockPath(v.path))
	if err != nil {
		return false, fmt.Errorf("save vault: %w", err)
	}
	defer unlock()
	cur, err := readFile(v.path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, &pathError{
			msg: fmt.Sprintf("vault %s was removed since it was opened; nothing was written", v.path),
			err: ErrModified,
		}
	}
	if err != nil {
		return false, fmt.Errorf("save vault: %w", err)
	}
	if sha256.Sum256(cur) != v.disk {
		return false, &pathError{
			msg: fmt.Sprintf("vault %s changed on disk since it was opened (another postern command wrote it); nothing was written: open it again and redo the change", v.path),
			err: ErrModified,
		}
	}
	target, err := filepath.EvalSymlinks(v.path)
	if err != nil {
		return false, fmt.Errorf("save vault: %w", err)
	}
	err = atomicfile.Write(target, data, 0o600)
	if err != nil && !errors.Is(err, atomicfile.ErrNotDurable) {
		return false, fmt.Errorf("save vault: %w", err)
	}
	return true, err // err: written, but the directory sync failed
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
	data, aad, wrap, err := v.encode(v.hdr, v.kek, v.dek, v.wrap, gen)
	if err != nil {
		return fmt.Errorf("save vault: %w", err)
	}
	renamed, err := v.replace(data)
	if renamed {
		v.aad, v.wrap, v.generation, v.disk = aad, wrap, gen, sha256.Sum256(data)
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

// Meta returns a copy of the public metadata.
func (v *Vault) Meta() map[string]string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return maps.Clone(v.hdr.meta)
}

// SetMeta replaces the public metadata; Save writes it. Only a vault
// unlocked with its passphrase (Create, Open) can change it, because the
// wrapped data key is bound to the header.
func (v *Vault) SetMeta(meta map[string]string) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.wiped {
		return ErrWiped
	}
	if v.kek == nil {
		return errors.New("set vault metadata: the vault was reopened with its data key; unlock it with the passphrase to change metadata")
	}
	hdr := v.hdr
	hdr.meta = maps.Clone(meta)
	if hdr.meta == nil {
		hdr.meta = map[string]string{}
	}
	if _, err := hdr.marshal(); err != nil {
		return fmt.Errorf("set vault metadata: %w", err)
	}
	v.hdr = hdr
	return nil
}

// Keys returns copies of the keys, in the order they were added. The
// caller owns the copies and should Wipe them when done; KeyInfos lists
// keys without copying private material.
func (v *Vault) Keys() []Key {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]Key, len(v.keys))
	for i, k := range v.keys {
		out[i] = k
		out[i].Private = slices.Clone(k.Private)
	}
	return out
}

// KeyInfos describes the keys (comment, added, public key, fingerprint)
// in the order they were added.
func (v *Vault) KeyInfos() ([]KeyInfo, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]KeyInfo, 0, len(v.keys))
	for i, k := range v.keys {
		info, err := k.Info()
		if err != nil {
			return nil, fmt.Errorf("key %d (%q): %w", i, k.Comment, err)
		}
		out = append(out, info)
	}
	return out, nil
}

// AddKey adds a copy of k (from NewKey, or read back from Keys). It checks
// that the key is of an accepted type, stored unencrypted, and that its
// public key matches its private key, and refuses a key whose public key
// is already in the vault (ErrDuplicateKey). A zero Added is set to now.
// Save writes it.
func (v *Vault) AddKey(k Key) error {
	pub, err := k.check()
	if err != nil {
		return fmt.Errorf("add key: %w", err)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.wiped {
		return ErrWiped
	}
	blob := pub.Marshal()
	for _, have := range v.keys {
		hp, err := have.PublicKey()
		if err == nil && bytes.Equal(hp.Marshal(), blob) {
			return &pathError{
				msg: fmt.Sprintf("add key: %s is already in the vault (comment %q)", ssh.FingerprintSHA256(pub), have.Comment),
				err: ErrDuplicateKey,
			}
		}
	}
	k.Private = slices.Clone(k.Private)
	if k.Added.IsZero() {
		k.Added = nowUTC()
	}
	v.keys = append(v.keys, k)
	return nil
}

// RemoveKey removes the key whose fingerprint ("SHA256:…") or comment is
// match, zeroing its private bytes; Save writes the change. A comment
// shared by several keys is refused as ambiguous: remove by fingerprint.
func (v *Vault) RemoveKey(match string) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.wiped {
		return ErrWiped
	}
	var byComment []int
	for i, k := range v.keys {
		if fp, err := k.Fingerprint(); err == nil && fp == match {
			v.removeAt(i)
			return nil
		}
		if k.Comment == match {
			byComment = append(byComment, i)
		}
	}
	switch len(byComment) {
	case 0:
		return &pathError{
			msg: fmt.Sprintf("remove key: no key has fingerprint or comment %q (postern vault list shows them)", match),
			err: ErrKeyNotFound,
		}
	case 1:
		v.removeAt(byComment[0])
		return nil
	}
	fps := make([]string, 0, len(byComment))
	for _, i := range byComment {
		fp, _ := v.keys[i].Fingerprint()
		fps = append(fps, fp)
	}
	return fmt.Errorf("remove key: %d keys have the comment %q; remove one by fingerprint: %s",
		len(byComment), match, strings.Join(fps, ", "))
}

func (v *Vault) removeAt(i int) {
	v.keys[i].Wipe()
	v.keys = slices.Delete(v.keys, i, i+1)
}

// Secret returns a copy of the named secret, or nil if there is none. The
// caller owns the copy and clears it when done.
func (v *Vault) Secret(name string) []byte {
	v.mu.Lock()
	defer v.mu.Unlock()
	s, ok := v.secrets[name]
	if !ok {
		return nil
	}
	return slices.Clone(s)
}

// SecretNames returns the names of the stored secrets, sorted.
func (v *Vault) SecretNames() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Sorted(maps.Keys(v.secrets))
}

// SetSecret stores a copy of value under name (1 to 255 bytes of UTF-8),
// zeroing any previous value; Save writes it. The caller keeps and clears
// its own value.
func (v *Vault) SetSecret(name string, value []byte) error {
	if err := validateSecretName(name); err != nil {
		return fmt.Errorf("set secret: %w", err)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.wiped {
		return ErrWiped
	}
	clear(v.secrets[name])
	v.secrets[name] = append(make([]byte, 0, len(value)), value...)
	return nil
}

// DeleteSecret removes the named secret, zeroing it, and reports whether
// it existed; Save writes the change.
func (v *Vault) DeleteSecret(name string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	s, ok := v.secrets[name]
	clear(s)
	delete(v.secrets, name)
	return ok
}
