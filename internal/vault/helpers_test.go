package vault

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// realDerivations counts the Argon2id derivations the tests perform, to
// keep the suite fast on small machines.
var realDerivations atomic.Int64

func TestMain(m *testing.M) {
	real := deriveKEK
	deriveKEK = func(pass, salt []byte, p Params) []byte {
		realDerivations.Add(1)
		return real(pass, salt, p)
	}
	realMeasure := measureKDF
	measureKDF = func(p Params) time.Duration {
		realDerivations.Add(1)
		return realMeasure(p)
	}
	code := m.Run()
	if testing.Verbose() {
		fmt.Printf("real Argon2id derivations: %d\n", realDerivations.Load())
	}
	os.Exit(code)
}

// useFastKDF replaces Argon2id by a hash for tests that exercise the
// file format rather than the KDF.
func useFastKDF(t testing.TB) {
	t.Helper()
	old := deriveKEK
	deriveKEK = func(pass, salt []byte, p Params) []byte {
		h := sha256.New()
		var b [9]byte
		binary.BigEndian.PutUint32(b[0:], p.Time)
		binary.BigEndian.PutUint32(b[4:], p.Memory)
		b[8] = p.Threads
		h.Write(b[:])
		h.Write(salt)
		h.Write(pass)
		return h.Sum(nil)
	}
	t.Cleanup(func() { deriveKEK = old })
}

var testPass = []byte("correct horse battery staple")

func newEd25519Key(t testing.TB, comment string) Key {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := NewKey(priv, comment)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// newTestVault creates a vault with one key, one secret and some metadata
// and saves it. Call useFastKDF first unless the test wants Argon2id.
func newTestVault(t testing.TB) (*Vault, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state", "vault")
	v, err := Create(path, testPass, FloorParams(),
		map[string]string{"audit.recipient": "age1examplerecipient", "created-by": "test"},
		map[string][]byte{"audit.identity": []byte("AGE-SECRET-KEY-1EXAMPLE")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Wipe)
	if err := v.AddKey(newEd25519Key(t, "test key")); err != nil {
		t.Fatal(err)
	}
	if err := v.Save(); err != nil {
		t.Fatal(err)
	}
	return v, path
}

// saveAndReopen saves v and opens the file again with the test passphrase,
// so the test sees what reached the disk.
func saveAndReopen(t testing.TB, v *Vault, path string) *Vault {
	t.Helper()
	if err := v.Save(); err != nil {
		t.Fatal(err)
	}
	w, err := Open(path, testPass)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Wipe)
	return w
}

func mustRead(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustWrite(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
