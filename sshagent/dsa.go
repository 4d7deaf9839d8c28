package sshagent

import (
	"crypto"
	"crypto/dsa"
	"crypto/rand"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"io"
	"math/big"

	"golang.org/x/crypto/ssh"
)

// DSA (ssh-dss) keys: OpenSSH 9's clients still offer them and its
// regression suite adds them, but x/crypto no longer parses or signs
// with them. The agent holds them as ssh-agent did, and its tests keep
// them working; OpenSSH 10 dropped them.

// dsaPublicKey is an ssh-dss public key.
type dsaPublicKey dsa.PublicKey

func (k *dsaPublicKey) Type() string { return ssh.InsecureKeyAlgoDSA }

func (k *dsaPublicKey) Marshal() []byte {
	return ssh.Marshal(struct {
		Name       string
		P, Q, G, Y *big.Int
	}{ssh.InsecureKeyAlgoDSA, k.P, k.Q, k.G, k.Y})
}

func (k *dsaPublicKey) CryptoPublicKey() crypto.PublicKey { return (*dsa.PublicKey)(k) }

func (k *dsaPublicKey) Verify(data []byte, sig *ssh.Signature) error {
	if sig.Format != ssh.InsecureKeyAlgoDSA || len(sig.Blob) != 40 {
		return errors.New("ssh-dss: malformed signature")
	}
	h := sha1.Sum(data)
	r := new(big.Int).SetBytes(sig.Blob[:20])
	s := new(big.Int).SetBytes(sig.Blob[20:])
	if !dsa.Verify((*dsa.PublicKey)(k), h[:], r, s) {
		return errors.New("ssh-dss: signature does not verify")
	}
	return nil
}

// parsePublicKey parses a public key blob: ssh-dss here, every other type
// with x/crypto. The blob's algorithm name picks the parser, so that the
// keys most requests name (Ed25519, ECDSA, RSA) are not first tried as
// DSA ones.
func parsePublicKey(blob []byte) (ssh.PublicKey, error) {
	switch keyName(blob) {
	case ssh.InsecureKeyAlgoDSA:
		var m struct {
			Name       string
			P, Q, G, Y *big.Int
		}
		if err := ssh.Unmarshal(blob, &m); err == nil {
			if m.P.BitLen() != 1024 || m.Q.BitLen() != 160 || m.G.Sign() <= 0 || m.Y.Sign() <= 0 {
				return nil, errors.New("ssh-dss: unsupported parameters")
			}
			return &dsaPublicKey{Parameters: dsa.Parameters{P: m.P, Q: m.Q, G: m.G}, Y: m.Y}, nil
		}
	case certAlgoDSA:
		var c struct {
			Name       string
			Nonce      []byte
			P, Q, G, Y *big.Int
			Rest       []byte `ssh:"rest"`
		}
		if err := ssh.Unmarshal(blob, &c); err == nil {
			// Named in sign requests (ssh-keygen -Y sign with a DSA
			// certificate); its key signs. It is not parsed further.
			pub := &dsaPublicKey{Parameters: dsa.Parameters{P: c.P, Q: c.Q, G: c.G}, Y: c.Y}
			return &dsaCertKey{blob: blob, key: pub}, nil
		}
	}
	return ssh.ParsePublicKey(blob)
}

// keyName returns the algorithm name a key blob begins with, or "" when
// it begins with no whole string.
func keyName(blob []byte) string {
	if len(blob) < 4 {
		return ""
	}
	n := binary.BigEndian.Uint32(blob)
	if uint64(n) > uint64(len(blob)-4) {
		return ""
	}
	return string(blob[4 : 4+n])
}

const certAlgoDSA = "ssh-dss-cert-v01@openssh.com"

// dsaCertKey is a DSA certificate as a sign request names it: its blob
// and the key it certifies.
type dsaCertKey struct {
	blob []byte
	key  *dsaPublicKey
}

func (k *dsaCertKey) Type() string                                 { return certAlgoDSA }
func (k *dsaCertKey) Marshal() []byte                              { return k.blob }
func (k *dsaCertKey) Verify(data []byte, sig *ssh.Signature) error { return k.key.Verify(data, sig) }

// dsaSigner signs with an ssh-dss key: SHA-1, r and s as 20 bytes each.
type dsaSigner struct{ k *dsa.PrivateKey }

func (s dsaSigner) PublicKey() ssh.PublicKey { return (*dsaPublicKey)(&s.k.PublicKey) }

func (s dsaSigner) Sign(_ io.Reader, data []byte) (*ssh.Signature, error) {
	h := sha1.Sum(data)
	r, sv, err := dsa.Sign(rand.Reader, s.k, h[:])
	if err != nil {
		return nil, err
	}
	blob := make([]byte, 40)
	r.FillBytes(blob[:20])
	sv.FillBytes(blob[20:])
	return &ssh.Signature{Format: ssh.InsecureKeyAlgoDSA, Blob: blob}, nil
}
