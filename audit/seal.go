package audit

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"

	"filippo.io/edwards25519"
	"golang.org/x/crypto/blake2b"
	"golang.org/x/crypto/curve25519"
	"golang.org/x/crypto/nacl/box"
)

// Entry plaintext: log id ‖ seq ‖ json length ‖ json ‖ zero padding, padded to
// a multiple of padBucket so that ciphertext sizes do not reveal event kinds.
const (
	padBucket          = 256
	sealOverhead       = box.AnonymousOverhead // ephemeral key 32 ‖ tag 16
	plaintextFixedSize = 16 + 8 + 4
	// maxPlaintext keeps every entry body within maxBody.
	maxPlaintext = (maxBody - bodyFixedSize - sealOverhead) / padBucket * padBucket
	// MaxEventSize is the largest encoded event Append accepts, in bytes of JSON.
	MaxEventSize = maxPlaintext - plaintextFixedSize
)

// sealEntry pads the encoded event, prefixes the log id and seq, and seals
// it to the recipient with an anonymous box. Nothing but the holder of the
// recipient's private key can open it; the writer cannot.
func sealEntry(logID [16]byte, seq uint64, js []byte, recipient *[32]byte) ([]byte, error) {
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
	ct, err := sealAnonymous(make([]byte, 0, n+sealOverhead), pt, recipient)
	clear(pt)
	if err != nil {
		return nil, fmt.Errorf("seal event: %w", err)
	}
	return ct, nil
}

// opener opens entry ciphertexts with the recipient's private key.
type opener struct {
	pub, priv [32]byte
}

func newOpener(identity [32]byte) (*opener, error) {
	pub, err := curve25519.X25519(identity[:], curve25519.Basepoint)
	if err != nil {
		return nil, fmt.Errorf("derive the audit recipient from the identity: %w", err)
	}
	o := &opener{priv: identity}
	copy(o.pub[:], pub)
	return o, nil
}

var errMoved = errors.New("moved")

// open decrypts an entry and checks that it was sealed for this log and this
// seq. It returns the encoded event.
func (o *opener) open(logID [16]byte, seq uint64, ct []byte) ([]byte, error) {
	pt, ok := box.OpenAnonymous(nil, ct, &o.pub, &o.priv)
	if !ok {
		return nil, errors.New("the ciphertext does not open with this identity: wrong identity, or the ciphertext was altered")
	}
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

// sealAnonymous is box.SealAnonymous, with its ephemeral public key
// computed by a fixed-base multiplication on the Edwards form of the
// curve: several times faster than the Montgomery ladder, and the same
// u-coordinate. The output is the same format (ephemeral public key, then
// the box), opened by box.OpenAnonymous.
func sealAnonymous(out, msg []byte, recipient *[32]byte) ([]byte, error) {
	var priv [32]byte
	if _, err := rand.Read(priv[:]); err != nil {
		return nil, err
	}
	defer clear(priv[:])
	sc, err := edwards25519.NewScalar().SetBytesWithClamping(priv[:])
	if err != nil {
		return nil, err
	}
	var epk [32]byte
	copy(epk[:], new(edwards25519.Point).ScalarBaseMult(sc).BytesMontgomery())
	var nonce [24]byte
	h, err := blake2b.New(24, nil)
	if err != nil {
		return nil, err
	}
	h.Write(epk[:])
	h.Write(recipient[:])
	h.Sum(nonce[:0])
	out = append(out, epk[:]...)
	return box.Seal(out, msg, &nonce, recipient, &priv), nil
}
