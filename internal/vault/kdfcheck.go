package vault

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"maps"
)

// The passphrase turns into the key-encryption key through the KDF
// parameters and the salt of the header, and the key check can only say
// that the key is not the right one: a damaged parameter or salt would
// read as a wrong passphrase, and the person would go on guessing. So
// every write that knows the passphrase records, in the public metadata,
// a check value of the parameters and the salt ("kdf-check"), and Open
// tests it before the derivation: a mismatch is corruption. A vault
// written before the check existed gets it at its next save with the
// passphrase.
const metaKDFCheck = "kdf-check"

// kdfCheck is the check value of h's KDF parameters and salt.
func kdfCheck(h *header) string {
	b := make([]byte, 0, 32+1+4+4+1+saltSize)
	b = append(b, "postern vault kdf check v1"...)
	b = append(b, kdfArgon2id)
	b = binary.BigEndian.AppendUint32(b, h.params.Time)
	b = binary.BigEndian.AppendUint32(b, h.params.Memory)
	b = append(b, h.params.Threads)
	b = append(b, h.salt[:]...)
	sum := sha256.Sum256(b)
	return base64.RawStdEncoding.EncodeToString(sum[:12])
}

// withKDFCheck returns h with the check value of its parameters and salt
// in its metadata.
func withKDFCheck(h header) header {
	h.meta = maps.Clone(h.meta)
	if h.meta == nil {
		h.meta = map[string]string{}
	}
	h.meta[metaKDFCheck] = kdfCheck(&h)
	return h
}

// checkKDF refuses a header whose parameters or salt do not match the
// check value it carries.
func checkKDF(h *header) error {
	if v, ok := h.meta[metaKDFCheck]; ok && v != kdfCheck(h) {
		return corrupt("the KDF parameters or the salt do not match their check value: the header is damaged, and no passphrase can open it")
	}
	return nil
}

// publicMeta is the metadata as callers set it: without the check value,
// which is the format's own.
func publicMeta(meta map[string]string) map[string]string {
	out := maps.Clone(meta)
	delete(out, metaKDFCheck)
	return out
}
