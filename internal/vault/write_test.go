package vault

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/postern/postern/internal/atomicfile"
)

// TestCrashBeforeRename makes the write fail after the temporary file is
// complete and before it replaces the vault.
func TestCrashBeforeRename(t *testing.T) {
	useFastKDF(t)
	v, path := newTestVault(t)
	orig := mustRead(t, path)
	if err := v.AddKey(newEd25519Key(t, "second")); err != nil {
		t.Fatal(err)
	}
	crash := errors.New("simulated crash")
	var tmpSeen []string
	restore := atomicfile.SetBeforeRenameForTest(func(string) error {
		tmpSeen, _ = filepath.Glob(filepath.Join(filepath.Dir(path), ".vault.*.tmp"))
		return crash
	})
	err := v.Save()
	restore()
	if !errors.Is(err, crash) {
		t.Fatalf("Save: %v", err)
	}
	if len(tmpSeen) != 1 {
		t.Fatalf("temporary files before rename: %v", tmpSeen)
	}
	if st, err := os.Stat(tmpSeen[0]); err == nil {
		t.Errorf("temporary file left behind (%v)", st.Mode())
	}
	if !bytes.Equal(orig, mustRead(t, path)) {
		t.Fatal("vault changed by a failed save")
	}
	w, err := Open(path, testPass)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(w.Keys()); n != 1 {
		t.Fatalf("old vault has %d keys", n)
	}
	w.Wipe()
	// The handle still matches the disk: the retry succeeds.
	w = saveAndReopen(t, v, path)
	if n := len(w.Keys()); n != 2 {
		t.Fatalf("after retry: %d keys", n)
	}
}

// TestCrashLeavesTemporaryFile: a crash that kills the process leaves the
// temporary file behind; the vault is still the old one and later saves
// work.
func TestCrashLeavesTemporaryFile(t *testing.T) {
	useFastKDF(t)
	v, path := newTestVault(t)
	orig := mustRead(t, path)
	stray := filepath.Join(filepath.Dir(path), ".vault.123.tmp")
	mustWrite(t, stray, orig[:len(orig)/2])
	if _, err := Open(path, testPass); err != nil {
		t.Fatal(err)
	}
	if err := v.SetSecret("x", []byte("y")); err != nil {
		t.Fatal(err)
	}
	if err := v.Save(); err != nil {
		t.Fatal(err)
	}
}

func TestConcurrentWriters(t *testing.T) {
	useFastKDF(t)
	_, path := newTestVault(t)
	a, err := Open(path, testPass)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Wipe()
	b, err := Open(path, testPass)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Wipe()
	a.SetSecret("from", []byte("a"))
	if err := a.Save(); err != nil {
		t.Fatal(err)
	}
	afterA := mustRead(t, path)
	b.SetSecret("from", []byte("b"))
	err = b.Save()
	if !errors.Is(err, ErrModified) || !strings.Contains(err.Error(), "open it again") {
		t.Fatalf("second writer: %v", err)
	}
	if !bytes.Equal(afterA, mustRead(t, path)) {
		t.Fatal("second writer overwrote the first")
	}
	// a can keep saving: it wrote the current file.
	if err := a.Save(); err != nil {
		t.Fatal(err)
	}

	// Two handles racing: exactly one wins.
	c, _ := Open(path, testPass)
	d, _ := Open(path, testPass)
	defer c.Wipe()
	defer d.Wipe()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, h := range []*Vault{c, d} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.SetSecret("race", []byte{byte(i)})
			errs[i] = h.Save()
		}()
	}
	wg.Wait()
	if (errs[0] == nil) == (errs[1] == nil) {
		t.Fatalf("race: %v, %v", errs[0], errs[1])
	}
	for _, err := range errs {
		if err != nil && !errors.Is(err, ErrModified) {
			t.Fatalf("loser: %v", err)
		}
	}

	// A removed vault is not recreated by Save.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := a.Save(); !errors.Is(err, ErrModified) {
		t.Fatalf("after removal: %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("Save recreated a removed vault")
	}
	if _, err := os.Stat(path + ".lock"); err != nil {
		t.Fatalf("lock file: %v", err)
	}
}

func TestSaveFollowsSymlink(t *testing.T) {
	useFastKDF(t)
	v, path := newTestVault(t)
	link := filepath.Join(t.TempDir(), "vault-link")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	w, err := Open(link, testPass)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Wipe()
	w.SetSecret("via", []byte("link"))
	if err := w.Save(); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the symlink was replaced")
	}
	_ = v
}
