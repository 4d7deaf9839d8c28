package vault

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// One flipped bit in the salt or the KDF parameters is corruption, never
// a wrong passphrase: the person is told the file is damaged, not sent
// guessing.
func TestKDFFieldDamageIsCorruption(t *testing.T) {
	useFastKDF(t)
	v, path := newTestVault(t)
	v.Wipe()
	good := mustRead(t, path)
	// header: kdf u8, time u32, memory u32, threads u8, salt [16]. Each
	// flip leaves the parameters within the floor and the limits (t=3
	// becomes 7), so that only the check value can tell.
	for name, f := range map[string]struct {
		off int
		bit byte
	}{"time": {prefixSize + 1 + 3, 0x04}, "memory": {prefixSize + 5 + 2, 0x01}, "threads": {prefixSize + 9, 0x01}, "salt": {prefixSize + 10 + 7, 0x01}} {
		b := append([]byte(nil), good...)
		b[f.off] ^= f.bit
		mustWrite(t, path, b)
		_, err := Open(path, testPass)
		if !errors.Is(err, ErrCorrupt) || errors.Is(err, ErrWrongPassphrase) {
			t.Errorf("%s bit flipped: %v", name, err)
		}
	}
	mustWrite(t, path, good)
	if _, err := Open(path, []byte("wrong")); !errors.Is(err, ErrWrongPassphrase) {
		t.Fatalf("a wrong passphrase: %v", err)
	}
	w, err := Open(path, testPass)
	if err != nil {
		t.Fatal(err)
	}
	w.Wipe()
}

// A vault put back to an older copy of itself is refused at the next
// open, with the data key as with the passphrase; removing the anchor
// accepts it (a restore from backup on purpose).
func TestRollbackRefused(t *testing.T) {
	useFastKDF(t)
	v, path := newTestVault(t)
	defer v.Wipe()
	old := mustRead(t, path)
	v.AddKey(newEd25519Key(t, "added later"))
	if err := v.Save(); err != nil {
		t.Fatal(err)
	}
	dk, _ := v.DataKey()
	defer dk.Wipe()
	mustWrite(t, path, old)
	if _, err := Open(path, testPass); !errors.Is(err, ErrRolledBack) {
		t.Fatalf("Open of the older copy: %v", err)
	}
	if _, err := OpenWithKey(path, dk); !errors.Is(err, ErrRolledBack) {
		t.Fatalf("OpenWithKey of the older copy: %v", err)
	}
	if err := os.Remove(path + ".generation"); err != nil {
		t.Fatal(err)
	}
	w, err := Open(path, testPass)
	if err != nil {
		t.Fatalf("without the anchor: %v", err)
	}
	if err := w.Anchor(); err != nil {
		t.Fatal(err)
	}
	w.Wipe()
	if id, gen, ok, _ := readAnchor(path); !ok || gen != w.generation || id != w.ID() {
		t.Fatalf("anchor after Anchor: %v %d", ok, gen)
	}
}

// A save removes the temporary files an interrupted write left, and
// only the vault's: not another file's, nor the anchor's (vault.generation),
// which another process may be writing as the save runs, outside the
// writers' lock.
func TestSaveRemovesLeftoverTemporaryFiles(t *testing.T) {
	useFastKDF(t)
	v, path := newTestVault(t)
	defer v.Wipe()
	dir := filepath.Dir(path)
	left := filepath.Join(dir, ".vault.123456789.tmp")
	mustWrite(t, left, []byte("half a vault"))
	others := []string{
		filepath.Join(dir, ".epoch.123456789.tmp"),
		filepath.Join(dir, "."+filepath.Base(anchorPath(path))+".123456789.tmp"),
	}
	for _, o := range others {
		mustWrite(t, o, []byte("not the vault's"))
	}
	if err := v.Save(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(left); err == nil {
		t.Fatal("the vault's leftover temporary file is still there")
	}
	for _, o := range others {
		if _, err := os.Stat(o); err != nil {
			t.Errorf("another file's temporary file was removed: %v", err)
		}
	}
}
