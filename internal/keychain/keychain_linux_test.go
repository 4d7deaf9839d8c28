package keychain

import (
	"bytes"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestSecretService needs a session bus with a Secret Service on it. In
// CI (Debian packages dbus-daemon, dbus-bin, gnome-keyring):
//
//	dbus-run-session -- sh -c '
//	  export HOME=$(mktemp -d) XDG_RUNTIME_DIR=$(mktemp -d)
//	  chmod 700 "$XDG_RUNTIME_DIR"
//	  printf %s test-password | gnome-keyring-daemon --unlock --components=secrets >/dev/null
//	  go test ./internal/keychain/'
//
// It writes an entry under a random vault ID and deletes it again. On a
// desktop session it uses the user's own default keyring.
func TestSecretService(t *testing.T) {
	if os.Getenv("DBUS_SESSION_BUS_ADDRESS") == "" {
		t.Skip("DBUS_SESSION_BUS_ADDRESS is unset: no session bus to test against (run under dbus-run-session with gnome-keyring-daemon; see the comment above)")
	}
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
	run := filepath.Join("/run/user", strconv.Itoa(os.Getuid()))
	for _, name := range []string{"bus", "dbus-session"} {
		if _, err := os.Stat(filepath.Join(run, name)); err == nil {
			t.Skipf("%s/%s exists: there is a session bus even without the variable", run, name)
		}
	}
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
