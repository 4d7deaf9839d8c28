package keychain

import (
	"bytes"
	"crypto/hkdf"
	"crypto/sha256"
	"math/big"
	"testing"
)

// serviceKey is the session key as the Secret Service derives it
// (gnome-keyring's egg_dh_gen_secret and egg_hkdf_perform): HKDF-SHA256
// over the shared secret at the group's full length.
func serviceKey(t *testing.T, clientPublic, servicePrivate *big.Int) []byte {
	t.Helper()
	secret := new(big.Int).Exp(clientPublic, servicePrivate, oakley2).FillBytes(make([]byte, groupSize))
	k, err := hkdf.Key(sha256.New, secret, nil, "", 16)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// A shared secret whose first byte is zero, as one in 256 is, keeps that
// byte in the key derivation: both sides derive the same key. The
// exponents are fixed, so the case is met on every run.
func TestSessionKeyLeadingZero(t *testing.T) {
	sum := sha256.Sum256([]byte("the service's private exponent"))
	servicePrivate := new(big.Int).SetBytes(sum[:])
	servicePublic := new(big.Int).Exp(oakley2G, servicePrivate, oakley2).FillBytes(make([]byte, groupSize))
	found := 0
	for x := int64(2); found < 3; x++ {
		private := big.NewInt(x)
		var secret []byte
		onSharedSecret = func(s []byte) { secret = bytes.Clone(s) }
		got, err := sessionKey(servicePublic, private)
		onSharedSecret = nil
		if err != nil {
			t.Fatal(err)
		}
		want := serviceKey(t, new(big.Int).Exp(oakley2G, private, oakley2), servicePrivate)
		if !bytes.Equal(got, want) {
			t.Fatalf("exponent %d: session key %x, the service derives %x (shared secret %x)", x, got, want, secret)
		}
		if len(secret) != groupSize {
			t.Fatalf("exponent %d: the shared secret went into the derivation as %d bytes, not %d", x, len(secret), groupSize)
		}
		if secret[0] == 0 {
			found++
			stripped, _ := hkdf.Key(sha256.New, bytes.TrimLeft(secret, "\x00"), nil, "", 16)
			if bytes.Equal(stripped, want) {
				t.Fatalf("exponent %d: the key does not depend on the leading zero byte", x)
			}
		}
	}
}

// A public value outside (1, p-1) is refused.
func TestSessionKeyRange(t *testing.T) {
	pMinus1 := new(big.Int).Sub(oakley2, big.NewInt(1))
	for _, y := range [][]byte{{}, {1}, pMinus1.Bytes(), oakley2.Bytes(), append([]byte{0}, pMinus1.Bytes()...)} {
		if _, err := sessionKey(y, big.NewInt(5)); err == nil {
			t.Errorf("public value %x accepted", y)
		}
	}
	if _, err := sessionKey([]byte{2}, big.NewInt(5)); err != nil {
		t.Errorf("public value 2 refused: %v", err)
	}
}

// A secret sealed in a session opens in it, whatever its length; one
// damaged, cut, sent in another session or under another key is an
// error, and never a panic.
func TestSealOpen(t *testing.T) {
	sess := &session{path: "/s/1", key: bytes.Repeat([]byte{7}, 16)}
	for n := 1; n <= 40; n++ {
		plain := bytes.Repeat([]byte{byte(n)}, n)
		sealed, err := sess.seal(plain)
		if err != nil {
			t.Fatal(err)
		}
		if len(sealed.Value)%16 != 0 || len(sealed.Value) <= n || sealed.Session != sess.path || len(sealed.Parameters) != 16 {
			t.Fatalf("%d bytes sealed as %+v", n, sealed)
		}
		got, err := sess.open(sealed)
		if err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("%d bytes: opened %x, %v", n, got, err)
		}
	}
	sealed, _ := sess.seal([]byte("the vault's key"))
	other := &session{path: "/s/2", key: bytes.Repeat([]byte{8}, 16)}
	bad := map[string]secret{
		"another session": {Session: "/s/2", Parameters: sealed.Parameters, Value: sealed.Value},
		"a short IV":      {Session: sess.path, Parameters: sealed.Parameters[:15], Value: sealed.Value},
		"no ciphertext":   {Session: sess.path, Parameters: sealed.Parameters},
		"a cut block":     {Session: sess.path, Parameters: sealed.Parameters, Value: sealed.Value[:15]},
		"zero padding":    {Session: sess.path, Parameters: sealed.Parameters, Value: zeroPadded(t, sess)},
	}
	for name, sec := range bad {
		if got, err := sess.open(sec); err == nil {
			t.Errorf("%s: opened as %x", name, got)
		}
	}
	wrong := sealed
	wrong.Session = other.path
	if got, err := other.open(wrong); err == nil && bytes.Equal(got, []byte("the vault's key")) {
		t.Error("opened under another key")
	}
}

// zeroPadded is a block whose last byte decrypts to 0, a padding length
// PKCS#7 does not have.
func zeroPadded(t *testing.T, sess *session) []byte {
	t.Helper()
	sealed, err := sess.seal(bytes.Repeat([]byte{0}, 16)) // a whole block of zeros, then one of padding
	if err != nil {
		t.Fatal(err)
	}
	return sealed.Value[:16] // ends in the plaintext's zero byte, read as the padding's length
}

// What the service sends back is the service's to choose: opening it
// never panics, and what opens is what a seal of it gives back.
func FuzzOpen(f *testing.F) {
	sess := &session{path: "/s/1", key: bytes.Repeat([]byte{7}, 16)}
	sealed, _ := sess.seal([]byte("the vault's key"))
	f.Add(sealed.Parameters, sealed.Value)
	f.Add(sealed.Parameters[:3], sealed.Value[:16])
	f.Add([]byte{}, []byte{})
	f.Fuzz(func(t *testing.T, iv, value []byte) {
		plain, err := sess.open(secret{Session: sess.path, Parameters: iv, Value: value})
		if err != nil {
			return
		}
		again, err := sess.seal(plain)
		if err != nil {
			t.Fatal(err)
		}
		back, err := sess.open(again)
		if err != nil || !bytes.Equal(back, plain) {
			t.Fatalf("opened %x; sealed again and opened: %x, %v", plain, back, err)
		}
	})
}
