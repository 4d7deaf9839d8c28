package sshagent

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"testing"

	"golang.org/x/crypto/ssh"
)

// A key the keyring lets go has its private key zeroed, not only
// dropped: removed (ssh-add -d, -D), wiped (SIGUSR1) or the vault's on a
// lock. The identity keeps the slice it was made from, which the test
// keeps too.
func TestKeysLetGoAreZeroed(t *testing.T) {
	for _, c := range []struct {
		name  string
		vault bool
		letGo func(k *Keyring, pub ssh.PublicKey) error
	}{
		{"ssh-add -d", false, func(k *Keyring, pub ssh.PublicKey) error { _, err := k.Remove(pub, ""); return err }},
		{"ssh-add -D", false, func(k *Keyring, _ ssh.PublicKey) error { _, err := k.RemoveAll(""); return err }},
		{"SIGUSR1", false, func(k *Keyring, _ ssh.PublicKey) error { k.Wipe(); return nil }},
		{"vault lock", true, func(k *Keyring, _ ssh.PublicKey) error { k.ReplaceVault(nil); return nil }},
	} {
		_, priv, _ := ed25519.GenerateKey(rand.Reader)
		id, err := NewIdentity(priv, nil, c.name)
		if err != nil {
			t.Fatal(err)
		}
		k := &Keyring{}
		if c.vault {
			k.ReplaceVault([]*Identity{id})
		} else if err := k.Add(id); err != nil {
			t.Fatal(err)
		}
		if err := c.letGo(k, id.Key); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !bytes.Equal(priv, make([]byte, len(priv))) {
			t.Errorf("%s: the private key is still in memory", c.name)
		}
	}
}
