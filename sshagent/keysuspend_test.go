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
	var mu sync.Mutex
	var slept time.Duration
	keys := &Keyring{DefaultLifetime: time.Hour, Now: func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return expirytest.Slept(t, time.Now(), slept)
	}}
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
	mu.Lock()
	slept = 2 * time.Hour
	mu.Unlock()
	if ids, _ := keys.Identities(); len(ids) != 0 {
		t.Errorf("a key whose lifetime passed while the machine slept is listed")
	}
	if _, err := keys.Lookup(id.Key); err == nil {
		t.Errorf("a key whose lifetime passed while the machine slept is used")
	}
}
