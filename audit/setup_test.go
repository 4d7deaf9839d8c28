package audit

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/edwards25519"
	"golang.org/x/crypto/curve25519"
)

func TestNewSetup(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	s, err := NewSetup(dir)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := curve25519.X25519(s.Identity[:], curve25519.Basepoint)
	if !bytes.Equal(pub, s.Recipient[:]) {
		t.Fatal("identity does not match recipient")
	}
	for _, f := range []struct {
		path string
		perm os.FileMode
	}{{s.KeyFile, 0o600}, {s.PinFile, 0o644}, {s.RecipientFile, 0o644}} {
		fi, err := os.Stat(f.path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != f.perm {
			t.Errorf("%s has mode %o, want %o", f.path, fi.Mode().Perm(), f.perm)
		}
	}
	// The identity is never written to disk.
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		if bytes.Contains(b, s.Identity[:]) {
			t.Fatalf("%s contains the identity", e.Name())
		}
	}
	pin, _ := os.ReadFile(s.PinFile)
	if strings.TrimSpace(string(pin)) != s.PK0String() || !strings.HasPrefix(s.PK0String(), "postern-audit+") {
		t.Fatalf("pin file %q", pin)
	}
	pk, err := ParsePK0(string(pin))
	if err != nil || !bytes.Equal(pk, s.PK0) {
		t.Fatalf("parse pk0: %v", err)
	}
	k, err := readKeyFile(s.KeyFile)
	if err != nil || k.epoch != 0 {
		t.Fatal(err)
	}
	if pub32(k.cur) != [32]byte(s.PK0) {
		t.Fatal("key file does not hold sk0")
	}
	loaded, err := LoadSetup(dir)
	if err != nil || loaded.Recipient != s.Recipient || !bytes.Equal(loaded.PK0, s.PK0) || loaded.Identity != ([32]byte{}) {
		t.Fatalf("load setup: %+v %v", loaded, err)
	}
	if _, err := NewSetup(dir); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("second setup in the same place: %v", err)
	}
}

func TestParseKeys(t *testing.T) {
	r := [32]byte{1, 2, 3}
	got, err := ParseRecipient(FormatRecipient(r))
	if err != nil || got != r {
		t.Fatalf("recipient round trip: %v", err)
	}
	for _, bad := range []string{
		"", "postern-audit", "postern-audit+", "age1xyz", "postern-audit+!!!!",
		"postern-audit+AAAA", FormatRecipient(r),
	} {
		if _, err := ParsePK0(bad); err == nil {
			t.Errorf("ParsePK0(%q) accepted", bad)
		}
	}
	if _, err := ParseRecipient(FormatPK0(make([]byte, 32))); err == nil {
		t.Error("a pin parsed as a recipient")
	}
}

// Chains start from an ephemeral key computed by a fixed-base
// multiplication on the Edwards form of the curve: it must be X25519's
// public key for the same scalar.
func TestEdwardsBaseIsX25519Base(t *testing.T) {
	// The Edwards fixed-base multiplication gives X25519's public key.
	for i := 0; i < 50; i++ {
		var k [32]byte
		rand.Read(k[:])
		want, _ := curve25519.X25519(k[:], curve25519.Basepoint)
		sc, _ := edwards25519.NewScalar().SetBytesWithClamping(k[:])
		if got := new(edwards25519.Point).ScalarBaseMult(sc).BytesMontgomery(); !bytes.Equal(got, want) {
			t.Fatalf("public keys differ for scalar %x", k)
		}
	}
}
