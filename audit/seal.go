package audit

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/crypto/curve25519"
	"golang.org/x/crypto/nacl/box"
)

// Entry plaintext: log id ‖ seq ‖ json length ‖ json ‖ zero padding, padded to
// a multiple of padBucket so that ciphertext sizes do not reveal event kinds.
const (
	padBucket          = 256
	sealOverheadV1     = box.AnonymousOverhead // version 1: ephemeral key 32 ‖ tag 16
	plaintextFixedSize = 16 + 8 + 4
	// maxPlaintext keeps every entry body within maxBody.
	maxPlaintext = (maxBody - bodyFixedSize - entryV2Overhead) / padBucket * padBucket
	// MaxEventSize is the largest encoded event Append accepts, in bytes of JSON.
	MaxEventSize = maxPlaintext - plaintextFixedSize
)

// padEntry builds the plaintext of an entry: the log id and seq, so that a
// reader can tell an entry moved from another position or log, then the
// encoded event, zero-padded.
func padEntry(logID [16]byte, seq uint64, js []byte) ([]byte, error) {
	if len(js) > MaxEventSize {
		return nil, fmt.Errorf("event is %d bytes encoded, the limit is %d: shorten its fields", len(js), MaxEventSize)
	}
	n := plaintextFixedSize + len(js)
	n = (n + padBucket - 1) / padBucket * padBucket
	pt := make([]byte, n)
	copy(pt, logID[:])
	binary.BigEndian.PutUint64(pt[16:24], seq)
	binary.BigEndian.PutUint32(pt[24:28], uint32(len(js)))
	copy(pt[28:], js)
	return pt, nil
}

// sealEntry seals the encoded event as entry seq with key, position n of
// the chain that starts at epk.
func sealEntry(logID [16]byte, seq uint64, js []byte, epk [32]byte, n uint32, key *[32]byte) ([]byte, error) {
	pt, err := padEntry(logID, seq, js)
	if err != nil {
		return nil, err
	}
	defer clear(pt)
	ct, err := sealV2(epk, n, key, pt)
	if err != nil {
		return nil, fmt.Errorf("seal event: %w", err)
	}
	return ct, nil
}

var errMoved = errors.New("moved")

// unpadEntry checks that a decrypted entry was sealed for this log and this
// seq and returns the encoded event.
func unpadEntry(logID [16]byte, seq uint64, pt []byte) ([]byte, error) {
	if len(pt) < plaintextFixedSize || len(pt)%padBucket != 0 {
		return nil, fmt.Errorf("decrypted entry has an impossible size of %d bytes", len(pt))
	}
	var gotID [16]byte
	copy(gotID[:], pt[:16])
	gotSeq := binary.BigEndian.Uint64(pt[16:24])
	if gotID != logID || gotSeq != seq {
		return nil, fmt.Errorf("%w: the entry was sealed for seq %d of log %x, not seq %d of log %x: it was moved or copied here",
			errMoved, gotSeq, gotID, seq, logID)
	}
	n := int(binary.BigEndian.Uint32(pt[24:28]))
	if n > len(pt)-plaintextFixedSize {
		return nil, fmt.Errorf("decrypted entry announces %d bytes of event in %d bytes", n, len(pt)-plaintextFixedSize)
	}
	if !allZero(pt[plaintextFixedSize+n:]) {
		return nil, errors.New("decrypted entry has non-zero padding")
	}
	return pt[plaintextFixedSize : plaintextFixedSize+n], nil
}

func allZero(b []byte) bool {
	return len(bytes.TrimLeft(b, "\x00")) == 0
}

// opener opens entries with the recipient's private key: version 1 entries
// (one anonymous box each) and version 2 entries (a key chain).
type opener struct {
	pub, priv [32]byte
	chains    chainReader
}

func newOpener(identity [32]byte) (*opener, error) {
	pub, err := curve25519.X25519(identity[:], curve25519.Basepoint)
	if err != nil {
		return nil, fmt.Errorf("derive the audit recipient from the identity: %w", err)
	}
	o := &opener{priv: identity}
	copy(o.pub[:], pub)
	o.chains = chainReader{identity: identity, recipient: o.pub}
	return o, nil
}

// open decrypts an entry of the given record version and checks that it
// was sealed for this log and this seq. It returns the encoded event.
func (o *opener) open(version byte, logID [16]byte, seq uint64, ct []byte) ([]byte, error) {
	var pt []byte
	if version == 1 {
		var ok bool
		if pt, ok = box.OpenAnonymous(nil, ct, &o.pub, &o.priv); !ok {
			return nil, errors.New("the ciphertext does not open with this identity: wrong identity, or the ciphertext was altered")
		}
	} else {
		var err error
		if pt, err = o.chains.open(ct); err != nil {
			return nil, err
		}
	}
	return unpadEntry(logID, seq, pt)
}

func (o *opener) erase() {
	clear(o.priv[:])
	o.chains.erase()
}
