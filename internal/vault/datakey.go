package vault

import (
	"bytes"
	"errors"
	"slices"
)

// DataKey is a vault's data-encryption key, the random key the body is
// sealed with. Whoever holds it and the file can read every key in the
// vault, exactly as with the passphrase. It exists so that a running
// gateway can reload the vault after another command changed it
// (OpenWithKey) without asking for the passphrase again, and so that the
// key can be kept in the OS keychain (Export, ParseDataKey).
//
// A DataKey is opaque: the bytes leave it only through Export. Wipe it when
// the vault is locked.
type DataKey struct {
	id  [idSize]byte
	key []byte
}

// exportMagic prefixes an exported DataKey so that a stray keychain entry
// is not mistaken for one.
const exportMagic = "PVDK1"

// VaultID returns the ID of the vault the key belongs to.
func (k *DataKey) VaultID() [16]byte { return k.id }

// Wipe zeroes the key. The DataKey is unusable afterwards.
func (k *DataKey) Wipe() {
	if k == nil {
		return
	}
	clear(k.key)
	k.key = nil
}

// Export returns the key with its vault ID in a self-describing form for
// storage in the OS keychain. The caller owns the result and clears it.
func (k *DataKey) Export() []byte {
	out := make([]byte, 0, len(exportMagic)+idSize+keySize)
	out = append(out, exportMagic...)
	out = append(out, k.id[:]...)
	return append(out, k.key...)
}

// ParseDataKey is the inverse of Export. It does not keep b; the caller
// clears it.
func ParseDataKey(b []byte) (*DataKey, error) {
	if len(b) != len(exportMagic)+idSize+keySize || !bytes.HasPrefix(b, []byte(exportMagic)) {
		return nil, errors.New("not an exported postern vault data key")
	}
	k := &DataKey{key: slices.Clone(b[len(exportMagic)+idSize:])}
	copy(k.id[:], b[len(exportMagic):])
	return k, nil
}

func (k *DataKey) usable() bool { return k != nil && len(k.key) == keySize }
