package gateway

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/postern/postern/internal/vault"
)

// A vault this gateway has opened whose header a program rewrote with
// other key derivation parameters (raised to the ceiling, 1 GiB and 32
// passes) is refused at once, saying so, with nothing derived: each
// unlock ran that derivation and then said "wrong passphrase", for the
// person to try again, since no passphrase opens a vault whose
// parameters changed under its wrapped key. The parameters the gateway
// changes itself (a vault change with a new passphrase) are taken in.
func TestVaultWithForeignKDFParametersIsRefusedWithoutDeriving(t *testing.T) {
	pass := []byte("the person's passphrase")
	s, keys, path := newVaultStateWithKey(t, pass, "k")
	s.start()
	unlockOne(t, s, keys, pass)
	if err := s.Lock(nil); err != nil {
		t.Fatal(err)
	}
	// Changed through the gateway: taken in, and it unlocks.
	mine := vault.FloorParams()
	mine.Time++
	if err := s.Change(context.Background(), pass, true, func(v *vault.Vault) error { return v.ChangePassphrase(pass, mine) }); err != nil {
		t.Fatal(err)
	}
	if err := s.UnlockCommand(context.Background(), pass, true, func() error { return nil }); err != nil {
		t.Fatalf("unlock after the gateway's own change of the parameters: %v", err)
	}
	if err := s.Lock(nil); err != nil {
		t.Fatal(err)
	}
	derived := 0
	s.derived = func() { derived++ }

	// Rewritten outside the gateway (here with the passphrase, as the
	// header is the format's own; a program without it changes the same
	// bytes, and then no passphrase opens the file).
	v, err := vault.Open(path, pass)
	if err != nil {
		t.Fatal(err)
	}
	raised := mine
	raised.Time++
	if err := v.ChangePassphrase(pass, raised); err != nil {
		t.Fatal(err)
	}
	v.Wipe()
	s.fileChanged()

	err = s.UnlockCommand(context.Background(), pass, true, func() error { return nil })
	if !errors.Is(err, vault.ErrCorrupt) || !strings.Contains(err.Error(), "key derivation parameters") || errors.Is(err, vault.ErrWrongPassphrase) {
		t.Fatalf("unlock of a vault whose KDF parameters were rewritten: %v", err)
	}
	if derived != 0 {
		t.Fatalf("%d key derivations made before the refusal, want none", derived)
	}
	if n := s.guesses.failures(); n != 0 {
		t.Fatalf("the refusal counted as %d wrong passphrases", n)
	}
	if !keys.Locked() {
		t.Fatal("the keyring is unlocked")
	}
}

// The vault's id is in its header too: a program that changes it with
// the parameters (or puts another vault in place) does not pass for a new
// vault whose derivation costs many times the last one's. A new vault of
// like parameters, as vault init makes on this machine, still unlocks.
func TestVaultOfAnotherIdAndFarCostlierKDFIsRefusedWithoutDeriving(t *testing.T) {
	pass := []byte("the person's passphrase")
	s, keys, path := newVaultStateWithKey(t, pass, "k")
	s.start()
	unlockOne(t, s, keys, pass)
	if err := s.Lock(nil); err != nil {
		t.Fatal(err)
	}
	derived := 0
	s.derived = func() { derived++ }
	replace := func(p vault.Params) {
		t.Helper()
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		v, err := vault.Create(path, pass, p, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		v.Wipe()
		s.fileChanged()
	}
	costly := vault.FloorParams()
	costly.Time *= 3
	replace(costly)
	err := s.UnlockCommand(context.Background(), pass, true, func() error { return nil })
	if !errors.Is(err, vault.ErrCorrupt) || !strings.Contains(err.Error(), "another vault") || derived != 0 {
		t.Fatalf("unlock of another vault three times as costly to derive: %v, %d derivations", err, derived)
	}
	replace(vault.FloorParams())
	if err := s.UnlockCommand(context.Background(), pass, true, func() error { return nil }); err != nil || derived != 1 {
		t.Fatalf("unlock of a new vault of like parameters: %v, %d derivations", err, derived)
	}
}
