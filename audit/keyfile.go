package audit

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/postern/postern/internal/atomicfile"
	"github.com/postern/postern/internal/smallfile"
)

// Key file: keyMagic ‖ epoch u64be ‖ seed of the current key [32] ‖ seed of
// the next key [32]. The current key signs checkpoint `epoch`; the next key
// is the one that checkpoint commits to. Both are kept so that a crash at any
// point of a checkpoint leaves a key that continues the chain.
const (
	keyMagic    = "POSTERN-AUDIT-KEY\x01"
	keyFileSize = len(keyMagic) + 8 + 2*ed25519.SeedSize
)

// keyState is the signing state of the key chain.
type keyState struct {
	epoch uint64
	cur   ed25519.PrivateKey // signs checkpoint epoch
	next  ed25519.PrivateKey // committed to by that checkpoint
}

func newKey() ed25519.PrivateKey {
	_, sk, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic("audit: crypto/rand failed: " + err.Error())
	}
	return sk
}

func (k *keyState) marshal() []byte {
	b := make([]byte, 0, keyFileSize)
	b = append(b, keyMagic...)
	b = binary.BigEndian.AppendUint64(b, k.epoch)
	b = append(b, k.cur.Seed()...)
	b = append(b, k.next.Seed()...)
	return b
}

func (k *keyState) erase() {
	clear(k.cur)
	clear(k.next)
}

func pub32(sk ed25519.PrivateKey) (p [32]byte) {
	copy(p[:], sk.Public().(ed25519.PublicKey))
	return p
}

// readKeyFile loads the key file and refuses one that others can read.
func readKeyFile(path string) (*keyState, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("audit key file %s is missing: without it no checkpoint can be signed; restore it, or move the log aside and set up a new one", path)
		}
		return nil, fmt.Errorf("audit key file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("audit key file %s is not a regular file", path)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("audit key file %s has mode %o: others can read the signing key; chmod 600 it (and treat the current key as exposed)", path, fi.Mode().Perm())
	}
	b, err := smallfile.Read(path, 64<<10)
	if err != nil {
		return nil, fmt.Errorf("audit key file: %w", err)
	}
	defer clear(b)
	if v := len(keyMagic) - 1; len(b) > v && bytes.HasPrefix(b, []byte(keyMagic[:v])) && b[v] > keyMagic[v] {
		// Of a later size too, perhaps: the version is read first.
		return nil, fmt.Errorf("audit key file %s: %w: version %d, and this build reads version %d: upgrade postern to read it", path, ErrNewerFormat, b[v], keyMagic[v])
	}
	if len(b) != keyFileSize || !bytes.HasPrefix(b, []byte(keyMagic)) {
		return nil, fmt.Errorf("audit key file %s is not a postern audit key file (or is damaged)", path)
	}
	p := b[len(keyMagic):]
	k := &keyState{epoch: binary.BigEndian.Uint64(p[:8])}
	k.cur = ed25519.NewKeyFromSeed(p[8:40])
	k.next = ed25519.NewKeyFromSeed(p[40:72])
	return k, nil
}

// writeKeyFile replaces the key file atomically: temp file, fsync, rename,
// fsync of the directory. The old contents are gone from the name once it
// returns (the file system may keep old blocks until they are reused).
func writeKeyFile(path string, k *keyState) error {
	b := k.marshal()
	defer clear(b)
	if err := atomicfile.Write(path, b, 0o600); err != nil {
		return fmt.Errorf("write audit key file: %w", err)
	}
	return nil
}

// reconcile matches the key file with the log: the log expects checkpoint
// epoch `epoch` to be signed by the key whose public half is want. It returns
// whether the key file must be advanced first (a crash after a checkpoint was
// appended but before the key file was updated).
func (k *keyState) reconcile(path string, epoch uint64, want [32]byte) (advance bool, err error) {
	switch {
	case k.epoch == epoch && pub32(k.cur) == want:
		return false, nil
	case k.epoch+1 == epoch && pub32(k.next) == want:
		return true, nil
	case k.epoch > epoch:
		return false, fmt.Errorf("audit key file %s is at epoch %d but the log's last checkpoint asks for epoch %d: the log was cut back or replaced; verify it, then restore it or move it aside and set up a new log", path, k.epoch, epoch)
	default:
		return false, fmt.Errorf("audit key file %s (epoch %d) does not hold the key the log expects for epoch %d: it belongs to another log or was replaced; restore the right key file, or move the log aside and set up a new one", path, k.epoch, epoch)
	}
}

// advance moves the chain one step: the next key becomes current and a fresh
// next key is made. The old current key is erased from memory.
func (k *keyState) advance() *keyState {
	nk := &keyState{epoch: k.epoch + 1, cur: k.next, next: newKey()}
	clear(k.cur)
	k.cur, k.next = nil, nil
	return nk
}
