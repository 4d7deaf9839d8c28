package sshagent

import (
	"crypto/ed25519"
	"crypto/rand"
	"slices"
	"testing"

	"golang.org/x/crypto/ssh"
)

// NewIdentity takes the private key it is given: one it cannot make an
// identity of (a certificate for another key, here) is wiped, as the
// vault's unlock, which decrypted it, counts on.
func TestNewIdentityWipesTheKeyItRefuses(t *testing.T) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	otherKey, err := ssh.NewPublicKey(other)
	if err != nil {
		t.Fatal(err)
	}
	cert := &ssh.Certificate{Key: otherKey, CertType: ssh.UserCert}
	if _, err := NewIdentity(priv, cert, "k"); err == nil {
		t.Fatal("an identity was made with a certificate for another key")
	}
	if !slices.Equal(priv, make(ed25519.PrivateKey, len(priv))) {
		t.Fatal("the private key NewIdentity refused is still in memory, not wiped")
	}
}
