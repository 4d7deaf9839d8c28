package sshagent

import (
	"bytes"
	"crypto/dsa"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// Source says where an identity came from.
type Source int

const (
	// Added identities came from ssh-add and live in memory only.
	Added Source = iota
	// Vault identities were decrypted from the vault at unlock.
	Vault
	// Upstream identities are held by the upstream agent, which signs
	// with them once postern has decided (see upstream.go).
	Upstream
)

func (s Source) String() string {
	switch s {
	case Vault:
		return "vault"
	case Upstream:
		return "upstream"
	}
	return "added"
}

// An Identity is a key the agent can sign with, and the constraints it was
// added with.
type Identity struct {
	Key     ssh.PublicKey // the public key, or the certificate when one was added
	Comment string
	Source  Source
	Confirm bool      // ssh-add -c: every use is confirmed
	Expires time.Time // ssh-add -t: zero means no lifetime
	Dest    []DestConstraint
	// Provider is the FIDO or PKCS#11 provider library that holds the
	// private key, for a key that is not held here.
	Provider string
	// Run is the run whose socket added the key, "" when one of the
	// person's sockets did: a run removes only its own keys.
	Run string
	// Forwarded: a connection that came through ssh (a host the agent is
	// forwarded to) added the key; it is listed after the person's.
	Forwarded bool

	sk     *skKey // a FIDO key: signed with by ssh-sk-helper
	signer ssh.Signer
	// release, when set, is called when the identity is destroyed: a
	// token's helper ends with the last identity that signs through it.
	release func()
	priv    any
	timer   *time.Timer
	enc     encoding
}

// encoding is an identity's key as the protocol carries it and its
// fingerprint, made once, when first asked for: every request finds its
// identity by comparing encodings, and x/crypto makes an encoding by
// reflecting over the key anew each time.
type encoding struct {
	once  sync.Once
	blob  []byte
	plain []byte // the plain key's, for a certificate; else blob
	fp    string
}

func (id *Identity) encode() *encoding {
	id.enc.once.Do(func() {
		e := &id.enc
		e.blob, e.plain = id.Key.Marshal(), nil
		switch id.Key.(type) {
		case *ssh.Certificate, *dsaCertKey, *agent.Key:
			e.plain = plainKey(id.Key).Marshal()
		default:
			e.plain = e.blob
		}
		e.fp = fingerprintOf(e.plain)
	})
	return &id.enc
}

// fingerprintOf is ssh.FingerprintSHA256 of the key encoded as blob.
func fingerprintOf(blob []byte) string {
	sum := sha256.Sum256(blob)
	return "SHA256:" + base64.RawStdEncoding.EncodeToString(sum[:])
}

// Blob returns the wire encoding of the identity's key (of the
// certificate, for one). It is shared: the caller must not change it.
func (id *Identity) Blob() []byte { return id.encode().blob }

// Fingerprint returns the SHA256 fingerprint of the underlying public key.
func (id *Identity) Fingerprint() string { return id.encode().fp }

// NewIdentity builds an identity from a private key (ed25519.PrivateKey,
// *ecdsa.PrivateKey or *rsa.PrivateKey, as x/crypto/ssh parses them) and
// an optional certificate for it. It takes priv: on an error, priv is
// wiped.
func NewIdentity(priv any, cert *ssh.Certificate, comment string) (id *Identity, err error) {
	if p, ok := priv.(*ed25519.PrivateKey); ok {
		priv = *p
	}
	defer func() {
		if err != nil {
			wipe(priv)
		}
	}()
	var signer ssh.Signer
	if d, ok := priv.(*dsa.PrivateKey); ok {
		signer = dsaSigner{d}
	} else if signer, err = ssh.NewSignerFromKey(priv); err != nil {
		return nil, fmt.Errorf("unsupported private key: %w", err)
	}
	id = &Identity{Key: signer.PublicKey(), Comment: comment, signer: signer, priv: priv}
	if cert != nil {
		if !bytes.Equal(cert.Key.Marshal(), signer.PublicKey().Marshal()) {
			return nil, errors.New("certificate does not match the private key")
		}
		cs, err := ssh.NewCertSigner(cert, signer)
		if err != nil {
			return nil, err
		}
		id.signer, id.Key = cs, cert
	}
	return id, nil
}

// newSKIdentity makes the identity of a FIDO key, which signs through
// ssh-sk-helper with the provider library at provider, waiting for a
// touch for touchTimeout.
func newSKIdentity(k *skKey, provider, comment string, touchTimeout func() time.Duration) *Identity {
	return &Identity{Key: k.pub, Comment: comment, Provider: provider, sk: k, signer: &skSigner{key: k, provider: provider, touchTimeout: touchTimeout}}
}

// Touch reports whether a signature with the identity waits for a person
// to touch the security key that holds it. For a security key of an
// upstream agent, whose flags postern does not see, it may.
func (id *Identity) Touch() bool {
	if id.Source == Upstream {
		return strings.HasPrefix(plainKey(id.Key).Type(), "sk-")
	}
	return id.sk != nil && id.sk.flags&skUserPresenceRequired != 0
}

// Discard wipes the private key of an identity no keyring holds (one
// made and then not added).
func (id *Identity) Discard() { id.destroy() }

// destroy stops the expiry timer and wipes the private key. The caller
// holds the keyring lock.
func (id *Identity) destroy() {
	if id.timer != nil {
		id.timer.Stop()
	}
	wipe(id.priv)
	id.priv, id.signer = nil, nil
	if r := id.release; r != nil {
		id.release = nil
		r()
	}
}

// wipe zeroes what it can of a private key. Go's crypto packages keep
// derived values of their own (precomputed RSA parameters, a cache of
// expanded Ed25519 keys); those are released to the garbage collector,
// not zeroed.
func wipe(priv any) {
	switch k := priv.(type) {
	case ed25519.PrivateKey:
		clear(k)
	case *ecdsa.PrivateKey:
		wipeInt(k.D)
	case *dsa.PrivateKey:
		wipeInt(k.X)
	case *rsa.PrivateKey:
		wipeInt(k.D)
		for _, p := range k.Primes {
			wipeInt(p)
		}
		wipeInt(k.Precomputed.Dp)
		wipeInt(k.Precomputed.Dq)
		wipeInt(k.Precomputed.Qinv)
	}
}

func wipeInt(n *big.Int) {
	if n != nil {
		clear(n.Bits())
		n.SetInt64(0)
	}
}

// removableBy reports whether by (a run's id, "" for the person) may
// remove id: the person any, a run only what it added.
func (id *Identity) removableBy(by string) bool { return by == "" || id.Run == by }
