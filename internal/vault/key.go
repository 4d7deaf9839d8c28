package vault

import (
	"bytes"
	"crypto"
	"errors"
	"fmt"
	"slices"
	"time"

	"golang.org/x/crypto/ssh"
)

// Key is one SSH private key in the vault.
type Key struct {
	// Comment is the key's label, as ssh-add -l shows it.
	Comment string
	// Private is the unencrypted private key in OpenSSH format
	// ("BEGIN OPENSSH PRIVATE KEY", openssh-key-v1), as NewKey writes it.
	// It is secret: clear it (Key.Wipe) when done with a copy.
	Private []byte
	// Added is when the key was put in the vault.
	Added time.Time
	// Certs are certificates of the key, in SSH wire format, as
	// "postern vault add KEY-cert.pub" stored them. They are public.
	Certs [][]byte
}

// KeyInfo is the public description of a key: what listings need,
// without copying the private key.
type KeyInfo struct {
	Comment     string
	Added       time.Time
	PublicKey   ssh.PublicKey
	Fingerprint string // "SHA256:…", as ssh-keygen -l prints it
	Certs       []*ssh.Certificate
}

// NewKey returns a Key holding priv in OpenSSH format with the given
// comment, added now. priv must be a type ParsePrivateKeyFile accepts
// (Ed25519, ECDSA P-256/P-384/P-521, RSA ≥ 2048 bits).
func NewKey(priv crypto.PrivateKey, comment string) (Key, error) {
	priv, err := normalizeKey(priv)
	if err != nil {
		return Key{}, err
	}
	if len(comment) > maxComment {
		return Key{}, fmt.Errorf("key comment is longer than %d bytes", maxComment)
	}
	block, err := ssh.MarshalPrivateKey(priv, comment)
	if err != nil {
		return Key{}, fmt.Errorf("encode private key: %w", err)
	}
	p := encodePEM(block.Type, block.Bytes)
	clear(block.Bytes)
	return Key{Comment: comment, Private: p, Added: nowUTC()}, nil
}

// nowUTC is the time stamp for new keys: UTC, no monotonic reading.
func nowUTC() time.Time { return time.Now().UTC() }

// PublicKey returns the key's public half, read from the OpenSSH
// container without decoding the private part.
func (k Key) PublicKey() (ssh.PublicKey, error) {
	o, raw, err := k.container()
	if err != nil {
		return nil, err
	}
	defer clear(raw)
	return ssh.ParsePublicKey(slices.Clone(o.PubKey)) // raw is cleared on return
}

// Fingerprint returns the SHA256 fingerprint of the public key
// ("SHA256:…", as ssh-keygen -l and ssh-add -l print it).
func (k Key) Fingerprint() (string, error) {
	pub, err := k.PublicKey()
	if err != nil {
		return "", err
	}
	return ssh.FingerprintSHA256(pub), nil
}

// PrivateKey decodes the private key (ed25519.PrivateKey,
// *ecdsa.PrivateKey or *rsa.PrivateKey). The decoded key is a copy that
// Wipe does not reach; drop it as soon as possible.
func (k Key) PrivateKey() (crypto.PrivateKey, error) {
	priv, err := ssh.ParseRawPrivateKey(k.Private)
	if err != nil {
		return nil, fmt.Errorf("decode stored private key: %w", err)
	}
	return normalizeKey(priv)
}

// Signer returns an ssh.Signer for the key (see PrivateKey on copies).
func (k Key) Signer() (ssh.Signer, error) {
	priv, err := k.PrivateKey()
	if err != nil {
		return nil, err
	}
	return ssh.NewSignerFromKey(priv)
}

// Info returns the key's public description.
func (k Key) Info() (KeyInfo, error) {
	pub, err := k.PublicKey()
	if err != nil {
		return KeyInfo{}, err
	}
	certs, err := k.Certificates()
	if err != nil {
		return KeyInfo{}, err
	}
	return KeyInfo{Comment: k.Comment, Added: k.Added, PublicKey: pub, Fingerprint: ssh.FingerprintSHA256(pub), Certs: certs}, nil
}

// Certificates parses the key's certificates.
func (k Key) Certificates() ([]*ssh.Certificate, error) {
	out := make([]*ssh.Certificate, 0, len(k.Certs))
	for i, blob := range k.Certs {
		c, err := ParseCertificate(blob)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %w", i, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// ParseCertificate parses an OpenSSH certificate in wire format.
func ParseCertificate(blob []byte) (*ssh.Certificate, error) {
	pub, err := ssh.ParsePublicKey(blob)
	if err != nil {
		return nil, err
	}
	c, ok := pub.(*ssh.Certificate)
	if !ok {
		return nil, fmt.Errorf("a %s key is not a certificate", pub.Type())
	}
	return c, nil
}

// CertExpired reports whether c's validity ended before now.
func CertExpired(c *ssh.Certificate, now time.Time) bool {
	return c.ValidBefore != ssh.CertTimeInfinity && now.Unix() >= 0 && uint64(now.Unix()) >= c.ValidBefore
}

// Wipe zeroes the private key bytes.
func (k *Key) Wipe() {
	clear(k.Private)
}

// check verifies that k holds a usable key of an accepted type and that
// the public key in its container matches the private key, and returns
// the public key.
func (k Key) check() (ssh.PublicKey, error) {
	if len(k.Comment) > maxComment {
		return nil, fmt.Errorf("key comment is longer than %d bytes", maxComment)
	}
	o, raw, err := k.container()
	if err != nil {
		return nil, err
	}
	defer clear(raw)
	priv, err := ssh.ParseRawPrivateKey(k.Private)
	if err != nil {
		return nil, fmt.Errorf("decode private key: %w", err)
	}
	if _, _, err := checkEmbeddedPublic(priv, o.PubKey, ""); err != nil {
		return nil, err
	}
	if len(k.Certs) > maxCerts {
		return nil, fmt.Errorf("the key has %d certificates, more than the %d the vault keeps for one", len(k.Certs), maxCerts)
	}
	for _, c := range k.Certs {
		if err := certFits(c); err != nil {
			return nil, fmt.Errorf("a certificate: %w", err)
		}
	}
	certs, err := k.Certificates()
	if err != nil {
		return nil, err
	}
	for _, c := range certs {
		if !bytes.Equal(c.Key.Marshal(), o.PubKey) {
			return nil, errors.New("a certificate is for another key")
		}
	}
	return ssh.ParsePublicKey(slices.Clone(o.PubKey)) // raw is cleared on return
}

// certFits refuses a certificate (in wire format) larger than the vault
// keeps, before the change that brings it is recorded.
func certFits(blob []byte) error {
	if len(blob) > maxCertLen {
		return fmt.Errorf("it is %d bytes, more than the %d the vault keeps for one", len(blob), maxCertLen)
	}
	return nil
}

// container decodes the key's openssh-key-v1 container and refuses an
// encrypted one: the vault stores keys unencrypted (inside its own
// encryption), as NewKey writes them. o aliases raw, which the caller
// clears.
func (k Key) container() (o *opensshContainer, raw []byte, err error) {
	raw, err = decodeOpenSSHPEM(k.Private)
	if err != nil {
		return nil, nil, err
	}
	o, err = parseOpenSSHContainer(raw)
	if err == nil && (o.CipherName != "none" || o.KdfName != "none") {
		err = errors.New("the private key is encrypted; the vault stores keys unencrypted, as NewKey writes them")
	}
	if err != nil {
		clear(raw)
		return nil, nil, err
	}
	return o, raw, nil
}
