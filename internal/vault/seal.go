package vault

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"

	"golang.org/x/crypto/chacha20poly1305"
)

// Errors of the sealing layer, turned into the package's errors (with the
// path) by Open and finishOpen.
var (
	errWrongKEK = errors.New("the key-encryption key does not match the key check (wrong passphrase)")
	errBodyAuth = errors.New("the encrypted contents fail authentication")
)

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

// unwrapKey opens the data key wrapped in fp with kek. It fails with
// errWrongKEK when the check value differs (a wrong passphrase), and with a
// corruptError when the check matches but the unwrap fails (the header was
// edited).
func unwrapKey(kek []byte, fp *fileParts) ([]byte, error) {
	if !hmac.Equal(keyCheck(kek), fp.wrap[:checkSize]) {
		return nil, errWrongKEK
	}
	dek, err := unseal(kek, fp.wrap[checkSize:], fp.aad)
	if err != nil || len(dek) != keySize {
		clear(dek)
		return nil, corrupt("the header does not match the wrapped key (the header was edited)")
	}
	return dek, nil
}

// openBody decrypts and decodes the body of fp with dek; the plaintext is
// cleared. It fails with errBodyAuth when dek does not open the body, and
// with a corruptError when the decrypted body is malformed.
func openBody(dek []byte, fp *fileParts) (*body, error) {
	plain, err := unseal(dek, fp.body, fp.bodyAAD)
	if err != nil {
		return nil, errBodyAuth
	}
	defer clear(plain)
	return decodeBody(plain)
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
