package keychain

import (
	"errors"
	"strings"
	"testing"

	"github.com/postern/postern/internal/dbustest"
)

// The vault's key goes only to a bus whose daemon runs as this user: one
// of another user (that took the address of the user's bus after it
// went) sees every message on it, and could serve a Secret Service of
// its own.
func TestBusOfAnotherUserRefused(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", dbustest.StartAs(t, 65534))
	if err := Store([16]byte{1}, []byte("secret")); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "uid 65534") {
		t.Fatalf("Store on the bus of uid 65534: %v", err)
	}
}

// A bus that cuts a message short (a daemon killed mid-write, or a
// program of the user's serving the bus socket) makes each call fail:
// the D-Bus library this package used panicked there, in a goroutine of
// its own, which ended the command.
func TestBusCutShort(t *testing.T) {
	for name, call := range map[string]func() error{
		"Available": Available,
		"Store":     func() error { return Store([16]byte{1}, []byte("secret")) },
		"Delete":    func() error { return Delete([16]byte{1}) },
		"Load":      func() error { _, err := Load([16]byte{1}); return err },
	} {
		t.Setenv("DBUS_SESSION_BUS_ADDRESS", dbustest.CutBus(t))
		if err := call(); !errors.Is(err, ErrUnavailable) {
			t.Errorf("%s on a bus that cut its answer short: %v", name, err)
		}
	}
}

// A bus that takes the connection and never answers (a stopped daemon)
// fails the call once sessionbus.CallTimeout has passed: the D-Bus library this
// package used waited for its answer to the authentication for ever.
func TestBusThatNeverAnswers(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", dbustest.SilentBus(t))
	if err := Available(); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Available on a bus that never answers: %v", err)
	}
}
