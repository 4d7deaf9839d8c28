package sshagent

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"io"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// A device signature (a security key, a token) does not hold the
// keyring: while it waits for a touch, keys can be added and the keyring
// locked, and the signature is then dropped.
func TestDeviceSignDoesNotHoldKeyring(t *testing.T) {
	keys := &Keyring{}
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	s, _ := ssh.NewSignerFromKey(k)
	dev := &heldSigner{Signer: s, started: make(chan struct{}), release: make(chan struct{})}
	id := &Identity{Key: s.PublicKey(), Provider: "/usr/lib/token.so", signer: dev}
	if err := keys.Add(id); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := keys.SignSince(keys.Locks(), id, []byte("x"), 0); done <- err }()
	<-dev.started
	other, _ := NewIdentity(ed25519.NewKeyFromSeed(make([]byte, 32)), nil, "added while a touch waits")
	added := make(chan error, 1)
	go func() {
		err := keys.Add(other)
		keys.SetLocked(true)
		added <- err
	}()
	select {
	case err := <-added:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("adding a key waited for the device's touch")
	}
	close(dev.release)
	if err := <-done; !errors.Is(err, ErrLocked) {
		t.Fatalf("a device signature across a lock: %v", err)
	}
}

type heldSigner struct {
	ssh.Signer
	started, release chan struct{}
}

func (h *heldSigner) Sign(r io.Reader, data []byte) (*ssh.Signature, error) {
	close(h.started)
	<-h.release
	return h.Signer.Sign(r, data)
}

// A device signature whose key went while it waited for the touch
// (ssh-add -d, ssh-add -D, SIGUSR1, the end of its lifetime) is dropped,
// as one across a lock is: the key's removal was already answered.
func TestDeviceSignAcrossRemoval(t *testing.T) {
	for _, c := range []struct {
		name   string
		remove func(*Keyring, *Identity)
	}{
		{"ssh-add -d", func(k *Keyring, id *Identity) { k.Remove(id.Key, "") }},
		{"ssh-add -D", func(k *Keyring, _ *Identity) { k.RemoveAll("") }},
		{"SIGUSR1", func(k *Keyring, _ *Identity) { k.Wipe() }},
		{"lifetime", func(k *Keyring, id *Identity) { k.expire(id.Blob()) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			now := time.Now()
			keys := &Keyring{Now: func() time.Time { return now }}
			_, k, _ := ed25519.GenerateKey(rand.Reader)
			s, _ := ssh.NewSignerFromKey(k)
			dev := &heldSigner{Signer: s, started: make(chan struct{}), release: make(chan struct{})}
			id := &Identity{Key: s.PublicKey(), Provider: "/usr/lib/token.so", signer: dev, Expires: now.Add(time.Hour)}
			if err := keys.Add(id); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { _, err := keys.SignSince(keys.Locks(), id, []byte("x"), 0); done <- err }()
			<-dev.started
			now = now.Add(2 * time.Hour)
			c.remove(keys, id)
			if ids, _ := keys.Identities(); len(ids) != 0 {
				t.Fatalf("%d keys left", len(ids))
			}
			close(dev.release)
			if err := <-done; !errors.Is(err, ErrNotFound) {
				t.Fatalf("a device signature after %s of its key: %v", c.name, err)
			}
		})
	}
}
