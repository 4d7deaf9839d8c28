package keychain

import (
	"bytes"
	"crypto/rand"
	"errors"
	"testing"

	"github.com/postern/postern/internal/keychain/keychaintest"
)

// useBus points the package at a throwaway Secret Service
// (keychaintest.SessionBus) for the rest of the test.
func useBus(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", keychaintest.SessionBus(t))
}

// TestSecretService stores, loads and deletes an entry in a throwaway
// gnome-keyring on a private session bus.
func TestSecretService(t *testing.T) {
	useBus(t)
	if err := Available(); err != nil {
		t.Fatalf("Available: %v", err)
	}
	var id [16]byte
	rand.Read(id[:])
	t.Cleanup(func() { Delete(id) })

	if _, err := Load(id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Load before Store: %v", err)
	}
	if err := Delete(id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Delete before Store: %v", err)
	}
	if err := Store(id, nil); err == nil {
		t.Fatal("empty secret stored")
	}
	// 52 bytes is an exported vault data key; 32 fills AES blocks exactly.
	for _, n := range []int{52, 32, 1, 300} {
		secret := make([]byte, n)
		rand.Read(secret)
		if err := Store(id, secret); err != nil {
			t.Fatalf("Store %d bytes: %v", n, err)
		}
		got, err := Load(id)
		if err != nil {
			t.Fatalf("Load %d bytes: %v", n, err)
		}
		if !bytes.Equal(got, secret) {
			t.Fatalf("Load returned %x, stored %x", got, secret)
		}
	}
	// Another vault's entry is separate.
	var other [16]byte
	rand.Read(other[:])
	if _, err := Load(other); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Load of another vault: %v", err)
	}
	if err := Delete(id); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Load after Delete: %v", err)
	}
}

// TestNoSessionBus: without a bus the package reports ErrUnavailable
// and does not start one.
func TestNoSessionBus(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	t.Setenv("PATH", "") // dbus-launch must not be run
	var id [16]byte
	for name, err := range map[string]error{
		"Available": Available(),
		"Store":     Store(id, []byte{1}),
		"Delete":    Delete(id),
	} {
		if !errors.Is(err, ErrUnavailable) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := Load(id); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Load: %v", err)
	}
}

// One session in 256 has a shared secret whose first byte is zero; the
// service keeps that byte in the key derivation. Loads are repeated
// until one ran in such a session, then stores (each checked with a
// load) until one did; every secret must come back intact.
func TestSecretServiceLeadingZero(t *testing.T) {
	useBus(t)
	var id [16]byte
	rand.Read(id[:])
	t.Cleanup(func() { Delete(id) })
	var zero bool
	onSharedSecret = func(s []byte) { zero = s[0] == 0 }
	defer func() { onSharedSecret = nil }()
	const limit = 10000 // sessions per phase; 256 are expected
	secret := make([]byte, 52)
	rand.Read(secret)
	if err := Store(id, secret); err != nil {
		t.Fatalf("Store: %v", err)
	}
	for i := 0; ; i++ {
		if i == limit {
			t.Fatalf("no load in a session with a leading zero byte in %d sessions", limit)
		}
		got, err := Load(id)
		if err != nil || !bytes.Equal(got, secret) {
			t.Fatalf("Load (leading zero byte: %v): %x, %v; stored %x", zero, got, err, secret)
		}
		if zero {
			break
		}
	}
	for i := 0; ; i++ {
		if i == limit {
			t.Fatalf("no store in a session with a leading zero byte in %d sessions", limit)
		}
		rand.Read(secret)
		if err := Store(id, secret); err != nil {
			t.Fatalf("Store: %v", err)
		}
		storedZero := zero
		got, err := Load(id)
		if err != nil || !bytes.Equal(got, secret) {
			t.Fatalf("Load after a store (leading zero byte: %v): %x, %v; stored %x", storedZero, got, err, secret)
		}
		if storedZero {
			break
		}
	}
}
