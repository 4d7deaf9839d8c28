// Package sshkey decides which private keys postern will hold. Every way
// a key comes in — ssh-add to the agent, "postern vault add", the vault's
// keys at unlock — applies [Check], so that no key can poison the list of
// identities OpenSSH reads from the agent (a client that cannot parse one
// listed key fails to list them all).
//
// Accepted: Ed25519; ECDSA on P-256, P-384 and P-521; RSA of 2048 to
// 16384 bits with two primes, as OpenSSH 10 requires. The private and
// public halves must agree: an Ed25519 key's public half must be the one
// its seed gives, an ECDSA key's point the one its scalar gives, an RSA
// key must pass crypto/rsa's validation. DSA and anything else are
// refused with [ErrUnsupported].
package sshkey

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/subtle"
	"errors"
	"fmt"
)

// ErrUnsupported refuses a key of a type or size postern does not hold.
var ErrUnsupported = errors.New("unsupported key")

// Accepted says which keys are accepted, for error messages.
const Accepted = "postern accepts Ed25519, ECDSA (P-256, P-384, P-521) and RSA of 2048 bits or more"

// Check checks priv and returns it in the form ssh.NewSignerFromKey and
// ssh.MarshalPrivateKey expect (an Ed25519 key as a value, an RSA key
// precomputed). The error says what is wrong with the key.
func Check(priv crypto.PrivateKey) (crypto.PrivateKey, error) {
	switch k := priv.(type) {
	case *ed25519.PrivateKey:
		if k == nil {
			return nil, errors.New("nil private key")
		}
		return Check(*k)
	case ed25519.PrivateKey:
		if len(k) != ed25519.PrivateKeySize {
			return nil, fmt.Errorf("ed25519 private key has %d bytes, expected %d", len(k), ed25519.PrivateKeySize)
		}
		check := ed25519.NewKeyFromSeed(k.Seed())
		same := subtle.ConstantTimeCompare(check, k) == 1
		clear(check)
		if !same {
			return nil, errors.New("ed25519 private key is inconsistent: its public half does not match its seed")
		}
		return k, nil
	case *ecdsa.PrivateKey:
		return checkECDSA(k)
	case *rsa.PrivateKey:
		return checkRSA(k)
	case nil:
		return nil, errors.New("nil private key")
	}
	return nil, fmt.Errorf("%w: %T; %s", ErrUnsupported, priv, Accepted)
}

func checkECDSA(k *ecdsa.PrivateKey) (crypto.PrivateKey, error) {
	if k == nil || k.D == nil || k.X == nil || k.Y == nil || k.Curve == nil {
		return nil, errors.New("incomplete ECDSA private key")
	}
	switch k.Curve {
	case elliptic.P256(), elliptic.P384(), elliptic.P521():
	default:
		return nil, fmt.Errorf("%w: ECDSA on curve %s; %s", ErrUnsupported, k.Curve.Params().Name, Accepted)
	}
	priv, err := k.ECDH()
	if err != nil {
		return nil, fmt.Errorf("invalid ECDSA private key: %w", err)
	}
	pub, err := k.PublicKey.ECDH()
	if err != nil {
		return nil, fmt.Errorf("invalid ECDSA public key: %w", err)
	}
	if !priv.PublicKey().Equal(pub) {
		return nil, errors.New("ECDSA private key is inconsistent: its public point does not match its scalar")
	}
	return k, nil
}

// RSA key sizes postern holds.
const (
	MinRSABits = 2048
	MaxRSABits = 16384
)

func checkRSA(k *rsa.PrivateKey) (crypto.PrivateKey, error) {
	if k == nil || k.N == nil {
		return nil, errors.New("nil private key")
	}
	bits := k.N.BitLen()
	switch {
	case bits < MinRSABits:
		return nil, fmt.Errorf("%w: RSA key of %d bits is too weak; %s (ssh-keygen -t ed25519 makes a better one)", ErrUnsupported, bits, Accepted)
	case bits > MaxRSABits:
		return nil, fmt.Errorf("%w: RSA key of %d bits is larger than %d", ErrUnsupported, bits, MaxRSABits)
	case len(k.Primes) != 2:
		return nil, fmt.Errorf("%w: RSA key with %d primes; only two-prime keys can be stored in OpenSSH format", ErrUnsupported, len(k.Primes))
	}
	if err := k.Validate(); err != nil {
		return nil, fmt.Errorf("invalid RSA key: %w", err)
	}
	k.Precompute()
	return k, nil
}
