package sshagent

import (
	"bytes"
	"crypto/dsa"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"errors"
	"fmt"
	"math/big"
	"slices"

	"github.com/postern/postern/internal/sshkey"
	"golang.org/x/crypto/ssh"
)

// An addedKey is the key of an ADD_IDENTITY message, as
// sshkey_private_serialize writes it: its type name, the certificate for
// a certificate type, and the private fields of that type.
type addedKey struct {
	priv any              // ed25519.PrivateKey, *ecdsa.PrivateKey, *rsa.PrivateKey, *dsa.PrivateKey; nil for sk
	cert *ssh.Certificate // when the type is a certificate type
	sk   *skKey           // FIDO keys: held by the authenticator, not here
}

// skKey is the part of a FIDO key the agent holds: its public key and the
// handle the authenticator needs to sign. wire is the whole key as
// ssh-add sent it, which ssh-sk-helper takes back to sign.
type skKey struct {
	pub   ssh.PublicKey // sk-ecdsa-… or sk-ssh-ed25519…, or its certificate
	flags uint8
	wire  []byte
}

// User presence and verification flags of FIDO keys (sk-api.h).
const (
	skUserPresenceRequired     = 0x01
	skUserVerificationRequired = 0x04
)

const (
	keyAlgoSKECDSA256  = "sk-ecdsa-sha2-nistp256@openssh.com"
	keyAlgoSKED25519   = "sk-ssh-ed25519@openssh.com"
	certAlgoSKECDSA256 = "sk-ecdsa-sha2-nistp256-cert-v01@openssh.com"
	certAlgoSKED25519  = "sk-ssh-ed25519-cert-v01@openssh.com"
)

// Private fields per key type, after the public ones (or after the
// certificate, which carries them).
type (
	ed25519Priv struct {
		Pub, Priv []byte
		Rest      []byte `ssh:"rest"`
	}
	rsaPub struct {
		N, E *big.Int
		Rest []byte `ssh:"rest"`
	}
	// The private numbers are read as the bytes of their mpints, which
	// privInts clears in the request.
	rsaPriv struct {
		D, Iqmp, P, Q []byte
		Rest          []byte `ssh:"rest"`
	}
	dsaPub struct {
		P, Q, G, Y *big.Int
		Rest       []byte `ssh:"rest"`
	}
	privRest struct {
		X    []byte
		Rest []byte `ssh:"rest"`
	}
	ecdsaPub struct {
		Curve string
		Q     []byte
		Rest  []byte `ssh:"rest"`
	}
	ed25519Pub struct {
		Pub  []byte
		Rest []byte `ssh:"rest"`
	}
	skPriv struct {
		Application string
		Flags       uint8
		KeyHandle   []byte
		Reserved    []byte
		Rest        []byte `ssh:"rest"`
	}
)

var curves = map[string]elliptic.Curve{
	"nistp256": elliptic.P256(),
	"nistp384": elliptic.P384(),
	"nistp521": elliptic.P521(),
}

// parseAddedKey reads the key at the start of an ADD_IDENTITY payload and
// returns it with the bytes that follow it (comment and constraints).
func parseAddedKey(b []byte) (*addedKey, []byte, error) {
	var head struct {
		Type string
		Rest []byte `ssh:"rest"`
	}
	if err := ssh.Unmarshal(b, &head); err != nil {
		return nil, nil, fmt.Errorf("key type: %w", err)
	}
	k := &addedKey{}
	typ, rest := head.Type, head.Rest
	var certPub ssh.PublicKey // the certified key, for a certificate
	if isCertType(typ) {
		var c struct {
			Blob []byte
			Rest []byte `ssh:"rest"`
		}
		if err := ssh.Unmarshal(rest, &c); err != nil {
			return nil, nil, fmt.Errorf("certificate: %w", err)
		}
		pub, err := ssh.ParsePublicKey(c.Blob)
		if err != nil {
			return nil, nil, fmt.Errorf("certificate: %w", err)
		}
		cert, ok := pub.(*ssh.Certificate)
		if !ok || cert.Type() != typ {
			return nil, nil, fmt.Errorf("key of type %s does not hold a %s certificate", pub.Type(), typ)
		}
		k.cert, certPub, rest = cert, cert.Key, c.Rest
	}
	rest, err := k.parsePrivate(typ, certPub, rest)
	if err == nil {
		err = k.nameable()
	}
	if err != nil {
		wipe(k.priv)
		return nil, nil, err
	}
	if k.sk != nil {
		k.sk.wire = slices.Clone(b[:len(b)-len(rest)])
	}
	return k, rest, nil
}

func isCertType(typ string) bool {
	return len(typ) > len("-cert-v01@openssh.com") && typ[len(typ)-len("-cert-v01@openssh.com"):] == "-cert-v01@openssh.com"
}

// parsePrivate reads the fields of key type typ. certPub is the key the
// certificate holds, whose public fields are then not repeated (except
// for Ed25519, whose public key is).
func (k *addedKey) parsePrivate(typ string, certPub ssh.PublicKey, b []byte) ([]byte, error) {
	plain := typ
	if certPub != nil {
		plain = certPub.Type()
	}
	switch plain {
	case ssh.KeyAlgoED25519:
		var m ed25519Priv
		if err := ssh.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("ed25519 key: %w", err)
		}
		if len(m.Priv) != ed25519.PrivateKeySize || len(m.Pub) != ed25519.PublicKeySize || !bytes.Equal(m.Priv[32:], m.Pub) {
			clear(m.Priv)
			return nil, errors.New("ed25519 key: malformed")
		}
		priv := ed25519.NewKeyFromSeed(m.Priv[:32])
		clear(m.Priv)
		k.priv = priv
		return m.Rest, k.checkCert(certPub)
	case ssh.KeyAlgoRSA:
		var pub rsaPub
		if certPub == nil {
			if err := ssh.Unmarshal(b, &pub); err != nil {
				return nil, fmt.Errorf("rsa key: %w", err)
			}
			b = pub.Rest
		} else {
			ck, ok := certPub.(ssh.CryptoPublicKey).CryptoPublicKey().(*rsa.PublicKey)
			if !ok {
				return nil, errors.New("rsa certificate: not an RSA key")
			}
			pub.N, pub.E = ck.N, big.NewInt(int64(ck.E))
		}
		var m rsaPriv
		if err := ssh.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("rsa key: %w", err)
		}
		ints, err := privInts(m.D, m.Iqmp, m.P, m.Q)
		if err != nil {
			return nil, fmt.Errorf("rsa key: %w", err)
		}
		priv := &rsa.PrivateKey{D: ints[0], Primes: []*big.Int{ints[2], ints[3]}}
		wipeInt(ints[1])
		// As OpenSSH 10: a key a client cannot parse would make every
		// client fail to list the agent's identities.
		if bits := pub.N.BitLen(); bits < sshkey.MinRSABits || bits > sshkey.MaxRSABits {
			wipe(priv)
			return nil, fmt.Errorf("%w: RSA key of %d bits is too weak; RSA keys of %d to %d bits are accepted, as OpenSSH 10 does", sshkey.ErrUnsupported, bits, sshkey.MinRSABits, sshkey.MaxRSABits)
		}
		if !pub.E.IsInt64() || pub.E.Int64() > 1<<31-1 {
			wipe(priv)
			return nil, errors.New("rsa key: unsupported exponent")
		}
		priv.PublicKey = rsa.PublicKey{N: pub.N, E: int(pub.E.Int64())}
		if err := priv.Validate(); err != nil {
			wipe(priv)
			return nil, fmt.Errorf("rsa key: %w", err)
		}
		priv.Precompute()
		k.priv = priv
		return m.Rest, k.checkCert(certPub)
	case ssh.KeyAlgoDSA:
		var pub dsaPub
		if certPub == nil {
			if err := ssh.Unmarshal(b, &pub); err != nil {
				return nil, fmt.Errorf("dsa key: %w", err)
			}
			b = pub.Rest
		} else {
			ck, ok := certPub.(ssh.CryptoPublicKey).CryptoPublicKey().(*dsa.PublicKey)
			if !ok {
				return nil, errors.New("dsa certificate: not a DSA key")
			}
			pub.P, pub.Q, pub.G, pub.Y = ck.P, ck.Q, ck.G, ck.Y
		}
		var x privRest
		if err := ssh.Unmarshal(b, &x); err != nil {
			return nil, fmt.Errorf("dsa key: %w", err)
		}
		ints, err := privInts(x.X)
		if err != nil {
			return nil, fmt.Errorf("dsa key: %w", err)
		}
		priv := &dsa.PrivateKey{PublicKey: dsa.PublicKey{Parameters: dsa.Parameters{P: pub.P, Q: pub.Q, G: pub.G}, Y: pub.Y}, X: ints[0]}
		// x lies in (0, q): a negative one may have no power to check
		// (Exp returns nil), a large one costs an exponentiation of its
		// size.
		if priv.P.BitLen() != 1024 || priv.Q.BitLen() != 160 || priv.X.Sign() <= 0 || priv.X.Cmp(priv.Q) >= 0 ||
			new(big.Int).Exp(priv.G, priv.X, priv.P).Cmp(priv.Y) != 0 {
			wipe(priv)
			return nil, errors.New("dsa key: malformed")
		}
		k.priv = priv
		return x.Rest, k.checkCert(certPub)
	case ssh.KeyAlgoECDSA256, ssh.KeyAlgoECDSA384, ssh.KeyAlgoECDSA521:
		var q []byte
		curve := curves[plain[len("ecdsa-sha2-"):]]
		if certPub == nil {
			var pub ecdsaPub
			if err := ssh.Unmarshal(b, &pub); err != nil {
				return nil, fmt.Errorf("ecdsa key: %w", err)
			}
			if "ecdsa-sha2-"+pub.Curve != plain {
				return nil, errors.New("ecdsa key: curve does not match its type")
			}
			q, b = pub.Q, pub.Rest
		}
		var d privRest
		if err := ssh.Unmarshal(b, &d); err != nil {
			return nil, fmt.Errorf("ecdsa key: %w", err)
		}
		ints, err := privInts(d.X)
		if err != nil {
			return nil, fmt.Errorf("ecdsa key: %w", err)
		}
		priv := &ecdsa.PrivateKey{D: ints[0], PublicKey: ecdsa.PublicKey{Curve: curve}}
		if priv.D.Sign() <= 0 || priv.D.Cmp(curve.Params().N) >= 0 {
			wipe(priv)
			return nil, errors.New("ecdsa key: private scalar out of range")
		}
		scalar := priv.D.Bytes()
		priv.X, priv.Y = curve.ScalarBaseMult(scalar)
		clear(scalar)
		if q != nil && !bytes.Equal(elliptic.Marshal(curve, priv.X, priv.Y), q) {
			wipe(priv)
			return nil, errors.New("ecdsa key: public point does not match the private scalar")
		}
		k.priv = priv
		return d.Rest, k.checkCert(certPub)
	case keyAlgoSKECDSA256, keyAlgoSKED25519:
		pubBlob := []byte(nil)
		if certPub == nil {
			var rest []byte
			if plain == keyAlgoSKECDSA256 {
				var pub ecdsaPub
				if err := ssh.Unmarshal(b, &pub); err != nil || pub.Curve != "nistp256" {
					return nil, errors.New("sk-ecdsa key: malformed")
				}
				rest = pub.Rest
			} else {
				var pub ed25519Pub
				if err := ssh.Unmarshal(b, &pub); err != nil || len(pub.Pub) != ed25519.PublicKeySize {
					return nil, errors.New("sk-ed25519 key: malformed")
				}
				rest = pub.Rest
			}
			pubBlob = append(ssh.Marshal(struct{ T string }{plain}), b[:len(b)-len(rest)]...)
			b = rest
		} else if plain == keyAlgoSKED25519 {
			// The Ed25519 public key is repeated after the certificate.
			var pub ed25519Pub
			if err := ssh.Unmarshal(b, &pub); err != nil || !bytes.Equal(pub.Pub, certPub.(ssh.CryptoPublicKey).CryptoPublicKey().(ed25519.PublicKey)) {
				return nil, errors.New("sk-ed25519 certificate: key does not match")
			}
			b = pub.Rest
		}
		var m skPriv
		if err := ssh.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("security key: %w", err)
		}
		if len(m.KeyHandle) == 0 || len(m.Application) == 0 {
			return nil, errors.New("security key: no key handle or application")
		}
		if m.Flags&skUserVerificationRequired != 0 {
			// ssh-add refuses these too: every signature would fail.
			return nil, errors.New("security key: it requires user verification (a PIN), which the agent cannot ask for")
		}
		sk := &skKey{flags: m.Flags}
		app := ssh.Marshal(struct{ A string }{m.Application})
		if certPub == nil {
			// The public key blob is the type, the public fields, then
			// the application.
			pub, err := ssh.ParsePublicKey(append(pubBlob, app...))
			if err != nil {
				return nil, fmt.Errorf("security key: %w", err)
			}
			sk.pub = pub
		} else {
			if !bytes.HasSuffix(certPub.Marshal(), app) {
				return nil, errors.New("security key certificate: application does not match")
			}
			sk.pub = k.cert
		}
		k.sk = sk
		return m.Rest, nil
	}
	return nil, fmt.Errorf("unsupported key type %q", typ)
}

// privInts reads private numbers from the bytes of their mpints and
// clears those bytes: they are the request's own, which is left to the
// garbage collector. A private number is never negative.
func privInts(mpints ...[]byte) ([]*big.Int, error) {
	var err error
	ints := make([]*big.Int, len(mpints))
	for i, b := range mpints {
		if len(b) > 0 && b[0]&0x80 != 0 {
			err = errors.New("negative private number")
		}
		ints[i] = new(big.Int).SetBytes(b)
		clear(b)
	}
	if err != nil {
		for _, n := range ints {
			wipeInt(n)
		}
		return nil, err
	}
	return ints, nil
}

// nameable checks that a sign request can name the key: the agent reads
// the key a request names as x/crypto reads it (parsePublicKey), which
// refuses some keys OpenSSH reads (an RSA exponent of more than 24 bits),
// and would otherwise list a key whose every use it refuses.
func (k *addedKey) nameable() error {
	pub, err := k.publicKey()
	if err == nil {
		_, err = parsePublicKey(pub.Marshal())
	}
	if err == nil && k.cert != nil {
		_, err = parsePublicKey(k.cert.Key.Marshal())
	}
	if err != nil {
		return fmt.Errorf("%w: a key the agent could not read back from a sign request (%v)", sshkey.ErrUnsupported, err)
	}
	return nil
}

// checkCert checks that a certificate certifies the private key parsed.
func (k *addedKey) checkCert(certPub ssh.PublicKey) error {
	if certPub == nil {
		return nil
	}
	s, err := ssh.NewSignerFromKey(k.priv)
	if err != nil {
		return err
	}
	if !bytes.Equal(s.PublicKey().Marshal(), certPub.Marshal()) {
		wipe(k.priv)
		return errors.New("certificate does not match the private key")
	}
	return nil
}
