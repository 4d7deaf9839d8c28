package sshkey

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"math/big"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p521, _ := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	r2048, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	for name, k := range map[string]any{"ed25519": ed, "*ed25519": &ed, "p256": p256, "p521": p521, "rsa2048": r2048} {
		if _, err := Check(k); err != nil {
			t.Errorf("%s refused: %v", name, err)
		}
	}
	if k, _ := Check(&ed); k == nil {
		t.Error("a pointer to an Ed25519 key is not returned as a value")
	} else if _, ok := k.(ed25519.PrivateKey); !ok {
		t.Errorf("Check(&ed25519) returned %T", k)
	}

	r1024, _ := rsa.GenerateKey(rand.Reader, 1024)
	one := big.NewInt(1)
	tiny := &rsa.PrivateKey{PublicKey: rsa.PublicKey{N: one, E: 3}, D: one, Primes: []*big.Int{one, one}}
	notPrimes := &rsa.PrivateKey{PublicKey: r2048.PublicKey, D: r2048.D, Primes: []*big.Int{big.NewInt(7), big.NewInt(11)}}
	three, _ := rsa.GenerateMultiPrimeKey(rand.Reader, 3, 2048) //nolint:staticcheck // a three-prime key to refuse
	p224, _ := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
	offCurve := *p256
	offCurve.D = new(big.Int).Add(p256.D, one)
	notOnCurve := *p256
	notOnCurve.X = new(big.Int).Add(p256.X, one)
	badEd := ed25519.PrivateKey(append([]byte(nil), ed...))
	badEd[63] ^= 1
	for _, tt := range []struct {
		name        string
		key         any
		unsupported bool
		want        string
	}{
		{"1-bit RSA", tiny, true, "RSA key of 1 bits is too weak"},
		{"1024-bit RSA", r1024, true, "RSA key of 1024 bits is too weak"},
		{"three primes", three, true, "3 primes"},
		{"primes not of the modulus", notPrimes, false, "invalid RSA key"},
		{"P-224", p224, true, "curve P-224"},
		{"scalar not the point's", &offCurve, false, "does not match its scalar"},
		{"point off the curve", &notOnCurve, false, "point not on curve"},
		{"inconsistent Ed25519", badEd, false, "does not match its seed"},
		{"short Ed25519", ed25519.PrivateKey(ed[:10]), false, "10 bytes"},
		{"a string", "not a key", true, "string"},
		{"nil", nil, false, "nil private key"},
		{"nil RSA", (*rsa.PrivateKey)(nil), false, "nil private key"},
		{"nil ECDSA", (*ecdsa.PrivateKey)(nil), false, "incomplete ECDSA"},
	} {
		_, err := Check(tt.key)
		if err == nil || !strings.Contains(err.Error(), tt.want) || errors.Is(err, ErrUnsupported) != tt.unsupported {
			t.Errorf("%s: %v, want %q (unsupported %v)", tt.name, err, tt.want, tt.unsupported)
		}
	}
}
