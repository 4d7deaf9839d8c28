package sshagent

import (
	"crypto/ed25519"
	"crypto/rand"
	"sync"
	"testing"
	"time"

	"github.com/postern/postern/internal/expiry/expirytest"
)

// A key's lifetime (ssh-add -t, postern agent -t) counts the time the
// machine slept, as OpenSSH's ssh-agent counts it (CLOCK_BOOTTIME): a
// key added for an hour before a laptop slept through the night is gone
// in the morning, not listed and not used, though the monotonic clock
// its timer runs on says only minutes passed.
func TestKeyLifetimeCountsASuspend(t *testing.T) {
	keys, sleep := sleepyKeyring(t)
	keys.DefaultLifetime = time.Hour
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	id, err := NewIdentity(priv, nil, "laptop")
	if err != nil {
		t.Fatal(err)
	}
	if err := keys.Add(id); err != nil {
		t.Fatal(err)
	}
	if ids, _ := keys.Identities(); len(ids) != 1 {
		t.Fatalf("%d identities listed before the suspend", len(ids))
	}
	sleep(2 * time.Hour)
	if ids, _ := keys.Identities(); len(ids) != 0 {
		t.Errorf("a key whose lifetime passed while the machine slept is listed")
	}
	if _, err := keys.Lookup(id.Key); err == nil {
		t.Errorf("a key whose lifetime passed while the machine slept is used")
	}
}

// An added copy whose lifetime passed while the machine slept lends its
// comment to no key rule: the comments the rules match are those of the
// copies the keyring would still use, the vault's here.
func TestExpiredCopyLendsNoCommentAfterASuspend(t *testing.T) {
	keys, sleep := sleepyKeyring(t)
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	vaulted, err := NewIdentity(priv, nil, "laptop")
	if err != nil {
		t.Fatal(err)
	}
	keys.ReplaceVault([]*Identity{vaulted})
	added, err := NewIdentity(priv, nil, "ci-bot")
	if err != nil {
		t.Fatal(err)
	}
	added.Source, added.Expires = Added, keys.now().Add(time.Hour)
	if err := keys.Add(added); err != nil {
		t.Fatal(err)
	}
	if c := keys.Comments(added.Key); len(c) != 2 {
		t.Fatalf("comments before the suspend: %q, want both copies'", c)
	}
	sleep(2 * time.Hour)
	if c := keys.Comments(added.Key); len(c) != 1 || c[0] != "laptop" {
		t.Errorf("comments after the added copy's lifetime passed in a suspend: %q, want [\"laptop\"]", c)
	}
	// Nor does it hide the vault's copy, which it listed in its place.
	if ids, _ := keys.Identities(); len(ids) != 1 || ids[0].Comment != "laptop" {
		t.Errorf("after the added copy's lifetime passed in a suspend, %d identities listed, want the vault's", len(ids))
	}
}

// sleepyKeyring returns a keyring whose clock reads as a machine's that
// slept for as long as sleep was last told.
func sleepyKeyring(t *testing.T) (*Keyring, func(time.Duration)) {
	var mu sync.Mutex
	var slept time.Duration
	keys := &Keyring{Now: func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return expirytest.Slept(t, time.Now(), slept)
	}}
	return keys, func(d time.Duration) {
		mu.Lock()
		slept = d
		mu.Unlock()
	}
}
