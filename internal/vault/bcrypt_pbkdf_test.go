package vault

import (
	"bytes"
	"crypto"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/crypto/ssh"
)

// TestBcryptPBKDFKnownAnswers checks bcryptPBKDF against outputs of
// OpenBSD's reference bcrypt_pbkdf(3): its regression vector (password
// "password", salt "salt", 4 rounds) and the vectors golang.org/x/crypto
// generated with it for its own copy (ssh/internal/bcrypt_pbkdf), among
// them NUL bytes, UTF-8 and an output longer than one block.
func TestBcryptPBKDFKnownAnswers(t *testing.T) {
	for _, v := range []struct {
		password, salt string
		rounds         int
		want           string
	}{
		{"password", "salt", 4,
			"5bbf0cc293587f1c3635555c27796598d47e579071bf427e9d8fbe842aba34d9"},
		{"password", "salt", 12,
			"1ae42c05d487bc02f64921a4ebe4ea93bcacfe135fda99974c06b7b01fae149a"},
		{"passwordy\x00PASSWORD\x00", "salty\x00SALT\x00", 3,
			"7f310bd3e78c3280c59ce4595211a2928e8d4ec744c1ed2efc9f764e3388e0ad"},
		{"секретное слово", "посолить немножко", 8,
			"8df43fc6fe131fc47f0c9e39224bd94c70b6fcc8ee8135faddf61156e6cb2733ea765f315a3e1e4afc35bf8687d189254c1e05a6fe80c0617f9183d67260d6a115c6c94e3603e2303fbb43a76a64523ffda686b1d4518543"},
	} {
		want, _ := hex.DecodeString(v.want)
		got, err := bcryptPBKDF([]byte(v.password), []byte(v.salt), v.rounds, len(want))
		if err != nil {
			t.Fatalf("%q: %v", v.password, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%q, %q, %d rounds: got %x", v.password, v.salt, v.rounds, got)
		}
	}
}

// TestImportOpenSSHRegressKeys decrypts keys from OpenSSH's own
// regression suite (testdata/openssh/README): the whole path, bcrypt_pbkdf
// and AES included, must give the key and comment OpenSSH wrote.
func TestImportOpenSSHRegressKeys(t *testing.T) {
	const pass = "mekmitasdigoat"
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", "openssh", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	pub := func(name string) ssh.PublicKey {
		k, _, _, _, err := ssh.ParseAuthorizedKey(read(name))
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	for _, c := range []struct {
		file, pub, comment string
	}{
		{"ed25519_1_pw", "ed25519_1.pub", "ED25519 test key #1"},
		{"ecdsa_n_pw", "ecdsa_1.pub", "ecdsa w/o comment"},
	} {
		var asked int
		priv, comment, err := ParsePrivateKeyFile(read(c.file), func() ([]byte, error) {
			asked++
			return []byte(pass), nil
		})
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if asked != 1 || comment != c.comment {
			t.Errorf("%s: asked %d times, comment %q, want %q", c.file, asked, comment, c.comment)
		}
		signer, err := ssh.NewSignerFromKey(priv)
		if err != nil {
			t.Fatal(err)
		}
		if want := pub(c.pub); !bytes.Equal(signer.PublicKey().Marshal(), want.Marshal()) {
			t.Errorf("%s: public key %s, want %s", c.file, ssh.FingerprintSHA256(signer.PublicKey()), ssh.FingerprintSHA256(want))
		}
		_, _, err = ParsePrivateKeyFile(read(c.file), func() ([]byte, error) { return []byte("not " + pass), nil })
		if !errors.Is(err, ErrKeyPassphrase) {
			t.Errorf("%s with a wrong passphrase: %v", c.file, err)
		}
	}
	// The encrypted Ed25519 key is the unencrypted one, byte for byte.
	plain, comment, err := ParsePrivateKeyFile(read("ed25519_1"), nil)
	if err != nil || comment != "ED25519 test key #1" {
		t.Fatalf("ed25519_1: %q %v", comment, err)
	}
	enc, _, err := ParsePrivateKeyFile(read("ed25519_1_pw"), func() ([]byte, error) { return []byte(pass), nil })
	if err != nil {
		t.Fatal(err)
	}
	type equaler interface{ Equal(crypto.PrivateKey) bool }
	if !plain.(equaler).Equal(enc) {
		t.Fatal("the decrypted key differs from OpenSSH's unencrypted copy")
	}
}
