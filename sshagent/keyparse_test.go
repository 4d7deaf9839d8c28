package sshagent

import (
	"crypto/dsa"
	"crypto/ed25519"
	"crypto/rand"
	"math/big"
	"testing"

	"golang.org/x/crypto/ssh"
)

// The blob's algorithm name picks the parser: an Ed25519 key parses with
// x/crypto, a DSA key and a DSA certificate (which x/crypto no longer
// parses) here, and a blob cut short or with DSA parameters out of bounds
// is refused.
func TestParsePublicKeyByName(t *testing.T) {
	ed := newEd25519Key(t)
	var p dsa.Parameters
	if err := dsa.GenerateParameters(&p, rand.Reader, dsa.L1024N160); err != nil {
		t.Fatal(err)
	}
	k := &dsa.PrivateKey{PublicKey: dsa.PublicKey{Parameters: p}}
	if err := dsa.GenerateKey(k, rand.Reader); err != nil {
		t.Fatal(err)
	}
	dsaBlob := (&dsaPublicKey{Parameters: p, Y: k.Y}).Marshal()
	certBlob := ssh.Marshal(struct {
		Name       string
		Nonce      []byte
		P, Q, G, Y *big.Int
		Rest       []byte `ssh:"rest"`
	}{certAlgoDSA, []byte("nonce"), p.P, p.Q, p.G, k.Y, []byte("the rest of the certificate")})
	smallQ := ssh.Marshal(struct {
		Name       string
		P, Q, G, Y *big.Int
	}{ssh.InsecureKeyAlgoDSA, p.P, big.NewInt(7), p.G, k.Y})

	if key, err := parsePublicKey(ed.Marshal()); err != nil || key.Type() != ssh.KeyAlgoED25519 {
		t.Fatalf("Ed25519: %v %v", key, err)
	}
	if key, err := parsePublicKey(dsaBlob); err != nil || key.Type() != ssh.InsecureKeyAlgoDSA {
		t.Fatalf("DSA: %v %v", key, err)
	}
	key, err := parsePublicKey(certBlob)
	if c, ok := key.(*dsaCertKey); err != nil || !ok || string(c.Marshal()) != string(certBlob) || c.key.Y.Cmp(k.Y) != 0 {
		t.Fatalf("DSA certificate: %#v %v", key, err)
	}
	for name, bad := range map[string][]byte{
		"empty":           nil,
		"name cut short":  ed.Marshal()[:6],
		"Ed25519 cut":     ed.Marshal()[:20],
		"DSA cut":         dsaBlob[:len(dsaBlob)-3],
		"DSA with a 7 q":  smallQ,
		"certificate cut": certBlob[:30],
	} {
		if key, err := parsePublicKey(bad); err == nil {
			t.Errorf("%s: parsed as %v", name, key)
		}
	}
}

// BenchmarkParsePublicKey parses the Ed25519 key blob a sign request
// names, as every signature's request is parsed.
func BenchmarkParsePublicKey(b *testing.B) {
	blob := newEd25519Key(b).Marshal()
	for b.Loop() {
		if _, err := parsePublicKey(blob); err != nil {
			b.Fatal(err)
		}
	}
}

// newEd25519Key returns a new Ed25519 public key.
func newEd25519Key(t testing.TB) ssh.PublicKey {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// A DSA key's private value must lie between 0 and q: a negative one
// whose base shares a factor with p (no inverse to raise it to) is
// refused, not a panic, and so is one far larger than q, which would
// cost a modular exponentiation of its size.
func TestAddedDSAPrivateOutOfRange(t *testing.T) {
	p := new(big.Int).Lsh(big.NewInt(3), 1022) // 1024 bits, a multiple of 3
	q := new(big.Int).Lsh(big.NewInt(1), 159)
	q.Add(q, big.NewInt(1))
	for name, x := range map[string]*big.Int{
		"negative":  big.NewInt(-1),
		"zero":      big.NewInt(0),
		"q":         q,
		"far above": new(big.Int).Lsh(big.NewInt(1), 4096),
	} {
		g := big.NewInt(3) // shares p's factor 3
		y := big.NewInt(1)
		if x.Sign() > 0 {
			y.Exp(g, x, p)
		}
		b := ssh.Marshal(struct {
			T             string
			P, Q, G, Y, X *big.Int
		}{ssh.InsecureKeyAlgoDSA, p, q, g, y, x})
		if k, _, err := parseAddedKey(b); err == nil {
			t.Errorf("%s x: added as %v", name, k.priv)
		}
	}
}
