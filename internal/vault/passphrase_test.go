package vault

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/postern/postern/internal/atomicfile"
)

// TestChangePassphrase uses the real Argon2id.
func TestChangePassphrase(t *testing.T) {
	v, path := newTestVault(t)
	oldKey, _ := v.DataKey()
	defer oldKey.Wipe()
	newPass := []byte("a new and better passphrase")
	p := FloorParams()
	p.Time = 4
	if err := v.ChangePassphrase(newPass, p); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path, testPass); !errors.Is(err, ErrWrongPassphrase) {
		t.Fatalf("old passphrase: %v", err)
	}
	w, err := Open(path, newPass)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Wipe()
	if w.Params() != p || w.ID() != v.ID() || len(w.Keys()) != 1 || w.Meta()["created-by"] != "test" {
		t.Fatalf("after change: params %v keys %d meta %v", w.Params(), len(w.Keys()), w.Meta())
	}
	// The data key was rotated.
	if _, err := OpenWithKey(path, oldKey); !errors.Is(err, ErrStaleKey) {
		t.Fatalf("old data key: %v", err)
	}
	nk, _ := v.DataKey()
	defer nk.Wipe()
	x, err := OpenWithKey(path, nk)
	if err != nil {
		t.Fatal(err)
	}
	x.Wipe()
	// The handle that changed the passphrase can keep saving.
	if err := v.Save(); err != nil {
		t.Fatal(err)
	}
}

func TestChangePassphraseFailureKeepsState(t *testing.T) {
	useFastKDF(t)
	v, path := newTestVault(t)
	orig := mustRead(t, path)
	dk, _ := v.DataKey()
	defer dk.Wipe()
	restore := atomicfile.SetBeforeRenameForTest(func(string) error { return errors.New("disk full") })
	err := v.ChangePassphrase([]byte("new"), FloorParams())
	restore()
	if err == nil {
		t.Fatal("no error")
	}
	if !bytes.Equal(orig, mustRead(t, path)) {
		t.Fatal("file changed")
	}
	// Still the old passphrase and data key, in memory and on disk.
	if err := v.Save(); err != nil {
		t.Fatal(err)
	}
	w, err := OpenWithKey(path, dk)
	if err != nil {
		t.Fatal(err)
	}
	w.Wipe()
	w, err = Open(path, testPass)
	if err != nil {
		t.Fatal(err)
	}
	w.Wipe()
}

func TestOpenWithKey(t *testing.T) {
	useFastKDF(t)
	gateway, path := newTestVault(t)
	dk, err := gateway.DataKey()
	if err != nil {
		t.Fatal(err)
	}
	defer dk.Wipe()
	if dk.VaultID() != gateway.ID() {
		t.Fatal("VaultID")
	}

	// Another command adds a key with the passphrase...
	cli, err := Open(path, testPass)
	if err != nil {
		t.Fatal(err)
	}
	cli.AddKey(newEd25519Key(t, "added by cli"))
	if err := cli.Save(); err != nil {
		t.Fatal(err)
	}
	cli.Wipe()

	// ...and the gateway reloads without it, through the keychain form.
	exported := dk.Export()
	dk2, err := ParseDataKey(exported)
	clear(exported)
	if err != nil {
		t.Fatal(err)
	}
	defer dk2.Wipe()
	r, err := OpenWithKey(path, dk2)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Wipe()
	if n := len(r.Keys()); n != 2 || r.Generation() != 2 {
		t.Fatalf("reloaded: %d keys, generation %d", n, r.Generation())
	}
	// It can save, without the passphrase.
	r.SetSecret("k", []byte("v"))
	if err := r.Save(); err != nil {
		t.Fatal(err)
	}
	w, err := Open(path, testPass)
	if err != nil {
		t.Fatal(err)
	}
	if string(w.Secret("k")) != "v" {
		t.Fatal("secret lost")
	}
	w.Wipe()

	// A key for another vault, a garbled key, a wiped key.
	other, _ := newTestVault(t)
	ok, _ := other.DataKey()
	if _, err := OpenWithKey(path, ok); !errors.Is(err, ErrStaleKey) {
		t.Fatalf("other vault's key: %v", err)
	}
	bad := &DataKey{id: dk.id, key: make([]byte, keySize)}
	if _, err := OpenWithKey(path, bad); !errors.Is(err, ErrStaleKey) {
		t.Fatalf("wrong key: %v", err)
	}
	ok.Wipe()
	if _, err := OpenWithKey(path, ok); err == nil {
		t.Fatal("wiped key accepted")
	}
	if _, err := ParseDataKey([]byte("PVDK1short")); err == nil {
		t.Fatal("ParseDataKey accepted garbage")
	}
}

func TestWrongPassphraseDelay(t *testing.T) {
	want := []time.Duration{0, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}
	for i, w := range want {
		if got := WrongPassphraseDelay(i); got != w {
			t.Errorf("attempt %d: %v, want %v", i, got, w)
		}
	}
	if WrongPassphraseDelay(-3) != 0 || WrongPassphraseDelay(1<<30) != 10*time.Second {
		t.Error("out of range attempts")
	}
}
