package vault

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"golang.org/x/crypto/ssh"
)

// Meta returns a copy of the public metadata.
func (v *Vault) Meta() map[string]string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return publicMeta(v.hdr.meta)
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
		out[i].Certs = slices.Clone(k.Certs)
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

// ErrNoKeyForCert is returned when a certificate is added for a key the
// vault does not hold.
var ErrNoKeyForCert = errors.New("the vault holds no key for this certificate")

// AddCertificate stores cert beside the key it certifies, replacing the
// same certificate, and drops that key's certificates that have expired
// (an expired cert is refused). It returns the key's comment. Save
// writes it.
func (v *Vault) AddCertificate(cert *ssh.Certificate) (string, error) {
	now := nowUTC()
	if CertExpired(cert, now) {
		return "", errors.New("add certificate: it has expired")
	}
	if err := certFits(cert.Marshal()); err != nil {
		return "", fmt.Errorf("add certificate: %w", err)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.wiped {
		return "", ErrWiped
	}
	blob := cert.Marshal()
	want := cert.Key.Marshal()
	for i, k := range v.keys {
		pub, err := k.PublicKey()
		if err != nil || !bytes.Equal(pub.Marshal(), want) {
			continue
		}
		kept := [][]byte{}
		for _, c := range k.Certs {
			pc, err := ParseCertificate(c)
			if err != nil || CertExpired(pc, now) || bytes.Equal(c, blob) {
				continue
			}
			kept = append(kept, c)
		}
		if len(kept) >= maxCerts {
			return "", fmt.Errorf("add certificate: the key already has %d certificates", maxCerts)
		}
		v.keys[i].Certs = append(kept, blob)
		return k.Comment, nil
	}
	return "", fmt.Errorf("add certificate for %s: %w", ssh.FingerprintSHA256(cert.Key), ErrNoKeyForCert)
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
			msg: fmt.Sprintf("remove key: no key has fingerprint or comment %q", match),
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
