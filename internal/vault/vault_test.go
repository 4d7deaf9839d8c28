package vault

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/postern/postern/internal/atomicfile"
)

// TestCreateOpenRoundTrip uses the real Argon2id at the floor.
func TestCreateOpenRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "vault")
	meta := map[string]string{"audit.recipient": "age1qqq", "note": "ünïcode"}
	v, err := Create(path, testPass, FloorParams(), meta, map[string][]byte{"audit.identity": {1, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Wipe()
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("vault file mode: %v %v", st.Mode(), err)
	}
	k := newEd25519Key(t, "alice@laptop")
	wantFP, err := k.Fingerprint()
	if err != nil {
		t.Fatal(err)
	}
	if err := v.AddKey(k); err != nil {
		t.Fatal(err)
	}
	if err := v.SetSecret("empty", nil); err != nil {
		t.Fatal(err)
	}

	w := saveAndReopen(t, v, path)
	if w.ID() != v.ID() {
		t.Errorf("ID changed")
	}
	if got := w.Meta(); len(got) != 2 || got["audit.recipient"] != "age1qqq" || got["note"] != "ünïcode" {
		t.Errorf("meta = %v", got)
	}
	if got := w.Secret("audit.identity"); !bytes.Equal(got, []byte{1, 2, 3}) {
		t.Errorf("secret = %v", got)
	}
	if got := w.Secret("empty"); got == nil || len(got) != 0 {
		t.Errorf("empty secret = %#v, want empty non-nil", got)
	}
	if got := w.Secret("missing"); got != nil {
		t.Errorf("missing secret = %v", got)
	}
	if w.Generation() != 1 || w.Params() != FloorParams() {
		t.Errorf("generation %d params %v", w.Generation(), w.Params())
	}
	keys := w.Keys()
	if len(keys) != 1 || keys[0].Comment != "alice@laptop" || !bytes.Equal(keys[0].Private, k.Private) || !keys[0].Added.Equal(k.Added) {
		t.Fatalf("keys = %+v", keys)
	}
	infos, err := w.KeyInfos()
	if err != nil || len(infos) != 1 || infos[0].Fingerprint != wantFP {
		t.Fatalf("infos = %+v, %v", infos, err)
	}
	if _, err := keys[0].Signer(); err != nil {
		t.Fatal(err)
	}

	// Wrong passphrase: reported as such (the delay is the caller's).
	_, err = Open(path, []byte("wrong"))
	if !errors.Is(err, ErrWrongPassphrase) || errors.Is(err, ErrCorrupt) {
		t.Fatalf("wrong passphrase: %v", err)
	}
	if _, err := Open(path, nil); !errors.Is(err, ErrWrongPassphrase) {
		t.Fatalf("empty passphrase: %v", err)
	}
}

func TestOpenNotExist(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vault")
	for _, f := range []func() error{
		func() error { _, err := Open(path, testPass); return err },
		func() error { _, _, err := ReadMeta(path); return err },
		func() error { _, err := OpenWithKey(path, &DataKey{key: make([]byte, keySize)}); return err },
	} {
		err := f()
		if !errors.Is(err, ErrNotExist) || !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("err = %v", err)
		}
		if !strings.Contains(err.Error(), path) {
			t.Errorf("message does not say where: %v", err)
		}
		if strings.Contains(err.Error(), "postern ") {
			t.Errorf("a library error names a command; the advice belongs to the command line: %v", err)
		}
	}
}

func TestCreateRefusesExisting(t *testing.T) {
	useFastKDF(t)
	dir := t.TempDir()
	cases := map[string]func(p string){
		"empty file": func(p string) { mustWrite(t, p, nil) },
		"garbage":    func(p string) { mustWrite(t, p, []byte("not a vault")) },
		"directory":  func(p string) { os.Mkdir(p, 0o700) },
		"dangling symlink": func(p string) {
			if err := os.Symlink(filepath.Join(dir, "nowhere"), p); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, setup := range cases {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		setup(p)
		before, _ := os.Lstat(p)
		_, err := Create(p, testPass, FloorParams(), nil, nil)
		if !errors.Is(err, ErrExist) || !errors.Is(err, fs.ErrExist) {
			t.Errorf("%s: err = %v", name, err)
		}
		after, _ := os.Lstat(p)
		if before.Mode() != after.Mode() || before.Size() != after.Size() {
			t.Errorf("%s: file was changed", name)
		}
	}
	// And a real vault is not replaced either.
	v, path := newTestVault(t)
	orig := mustRead(t, path)
	if _, err := Create(path, []byte("other"), FloorParams(), nil, nil); !errors.Is(err, ErrExist) {
		t.Fatalf("err = %v", err)
	}
	if !bytes.Equal(orig, mustRead(t, path)) {
		t.Fatal("existing vault modified")
	}
	_ = v
}

func TestCreateValidates(t *testing.T) {
	useFastKDF(t)
	dir := t.TempDir()
	low := FloorParams()
	low.Memory = 32 << 10
	if _, err := Create(filepath.Join(dir, "a"), testPass, low, nil, nil); err == nil || !strings.Contains(err.Error(), "below the floor") {
		t.Errorf("below floor: %v", err)
	}
	if _, err := Create(filepath.Join(dir, "b"), nil, FloorParams(), nil, nil); err == nil {
		t.Error("empty passphrase accepted")
	}
	if _, err := Create(filepath.Join(dir, "c"), testPass, FloorParams(), map[string]string{"": "x"}, nil); err == nil {
		t.Error("empty meta key accepted")
	}
	if _, err := Create(filepath.Join(dir, "d"), testPass, FloorParams(), nil, map[string][]byte{"": nil}); err == nil {
		t.Error("empty secret name accepted")
	}
	big := map[string]string{"k": strings.Repeat("x", 0xffff), "l": strings.Repeat("y", 0xffff)}
	if _, err := Create(filepath.Join(dir, "e"), testPass, FloorParams(), big, nil); err == nil {
		t.Error("oversized header accepted")
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".lock") {
			t.Errorf("left behind %s", e.Name())
		}
	}
}

// region names the part of the file byte i belongs to.
func region(fp *fileParts, i int) string {
	switch {
	case i < len(fileMagic)+1:
		return "magic"
	case i < prefixSize:
		return "header length"
	case i < prefixSize+1:
		return "kdf"
	case i < prefixSize+10:
		return "params"
	case i < prefixSize+10+saltSize:
		return "salt"
	case i < len(fp.aad):
		return "header"
	case i < len(fp.aad)+4:
		return "wrap length"
	case i < len(fp.aad)+4+checkSize:
		return "check"
	case i < len(fp.aad)+4+wrapSize:
		return "wrapped key"
	case i < len(fp.aad)+4+wrapSize+4:
		return "body length"
	}
	return "body"
}

// TestTamperEveryByte flips bits in every byte of a vault: each change
// must be refused, and never panic. Edits of the salt, the parameters or
// the key check look like a wrong passphrase; every other edit is
// reported as corruption.
func TestTamperEveryByte(t *testing.T) {
	useFastKDF(t)
	v, path := newTestVault(t)
	dk, err := v.DataKey()
	if err != nil {
		t.Fatal(err)
	}
	defer dk.Wipe()
	orig := mustRead(t, path)
	fp, err := parseFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	mut := make([]byte, len(orig))
	for i := range orig {
		for _, mask := range []byte{0x01, 0x80} {
			copy(mut, orig)
			mut[i] ^= mask
			mustWrite(t, path, mut)
			r := region(fp, i)
			w, err := Open(path, testPass)
			if err == nil {
				w.Wipe()
				t.Fatalf("byte %d (%s) ^%#x: opened", i, r, mask)
			}
			switch r {
			case "params", "salt", "check":
				if !errors.Is(err, ErrWrongPassphrase) && !errors.Is(err, ErrCorrupt) {
					t.Fatalf("byte %d (%s): %v", i, r, err)
				}
			default:
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("byte %d (%s): want ErrCorrupt, got %v", i, r, err)
				}
			}
			w, err = OpenWithKey(path, dk)
			if err == nil {
				w.Wipe()
				t.Fatalf("byte %d (%s) ^%#x: opened with data key", i, r, mask)
			}
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrStaleKey) {
				t.Fatalf("byte %d (%s) with data key: %v", i, r, err)
			}
		}
	}
	// The untouched file still opens and a save over it still works.
	mustWrite(t, path, orig)
	w, err := Open(path, testPass)
	if err != nil {
		t.Fatal(err)
	}
	w.Wipe()
}

func TestTruncatedAndExtended(t *testing.T) {
	useFastKDF(t)
	_, path := newTestVault(t)
	orig := mustRead(t, path)
	fp, _ := parseFile(orig)
	for n := range len(orig) {
		mustWrite(t, path, orig[:n])
		_, err := Open(path, testPass)
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d: %v", n, err)
		}
		// ReadMeta needs the header only.
		if _, _, err := ReadMeta(path); (err == nil) != (n >= len(fp.aad)) {
			t.Fatalf("ReadMeta of %d bytes: %v", n, err)
		}
	}
	mustWrite(t, path, append(slices.Clone(orig), 0))
	if _, err := Open(path, testPass); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "unexpected bytes") {
		t.Fatalf("extended: %v", err)
	}
}

// TestOversizedLengths checks that huge lengths are refused before any
// allocation of that size.
func TestOversizedLengths(t *testing.T) {
	useFastKDF(t)
	_, path := newTestVault(t)
	orig := mustRead(t, path)
	fp, _ := parseFile(orig)
	set32 := func(b []byte, off int, v uint32) []byte {
		b = slices.Clone(b)
		b[off], b[off+1], b[off+2], b[off+3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
		return b
	}
	for name, data := range map[string][]byte{
		"header": set32(orig, len(fileMagic)+1, 0xffffffff),
		"wrap":   set32(orig, len(fp.aad), 0xffffffff),
		"body":   set32(orig, len(fp.aad)+4+wrapSize, 0xffffffff),
	} {
		_, err := parseFile(data)
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "length") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestParamsBelowFloor builds a file that is authentic in every respect
// except that its parameters are below the floor: it must be refused.
func TestParamsBelowFloor(t *testing.T) {
	useFastKDF(t)
	v, path := newTestVault(t)
	weak := Params{Time: 1, Memory: 8 << 10, Threads: 1}
	hdr := v.hdr
	hdr.params = weak
	// hdr.marshal refuses weak parameters; patch them into a copy of the
	// encoded header instead.
	aad := slices.Clone(v.aad)
	off := prefixSize + 1
	aad[off], aad[off+1], aad[off+2], aad[off+3] = 0, 0, 0, byte(weak.Time)
	aad[off+4], aad[off+5], aad[off+6], aad[off+7] = 0, 0, byte(weak.Memory>>8), byte(weak.Memory)
	aad[off+8] = weak.Threads
	kek := deriveKEK(testPass, hdr.salt[:], weak)
	wrap := wrapKey(kek, v.dek, aad)
	prefix := bodyAAD(aad, wrap)
	sealed, err := sealBody(v.dek, prefix, &body{generation: 9, keys: v.keys, secrets: v.secrets})
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, path, assemble(prefix, sealed))

	_, err = Open(path, testPass)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "below the floor") {
		t.Fatalf("Open: %v", err)
	}
	if _, _, err := ReadMeta(path); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("ReadMeta: %v", err)
	}
	dk, _ := v.DataKey()
	defer dk.Wipe()
	if _, err := OpenWithKey(path, dk); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("OpenWithKey: %v", err)
	}
	// ChangePassphrase keeps the floor too.
	if err := v.ChangePassphrase([]byte("new"), weak); err == nil {
		t.Fatal("ChangePassphrase accepted weak parameters")
	}
}

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

func TestReadMetaWithoutPassphrase(t *testing.T) {
	useFastKDF(t)
	v, path := newTestVault(t)
	deriveKEK = func([]byte, []byte, Params) []byte {
		t.Fatal("ReadMeta derived a key")
		return nil
	}
	meta, id, err := ReadMeta(path)
	if err != nil {
		t.Fatal(err)
	}
	if id != v.ID() || meta["audit.recipient"] != "age1examplerecipient" || len(meta) != 2 {
		t.Fatalf("meta %v id %x", meta, id)
	}
	if _, _, err := ReadMeta(filepath.Join(t.TempDir())); err == nil {
		t.Fatal("ReadMeta of a directory succeeded")
	}
}

func TestSetMeta(t *testing.T) {
	useFastKDF(t)
	v, path := newTestVault(t)
	if err := v.SetMeta(map[string]string{"audit.recipient": "age1new"}); err != nil {
		t.Fatal(err)
	}
	if err := v.Save(); err != nil {
		t.Fatal(err)
	}
	meta, _, err := ReadMeta(path)
	if err != nil || len(meta) != 1 || meta["audit.recipient"] != "age1new" {
		t.Fatalf("meta %v %v", meta, err)
	}
	w, err := Open(path, testPass)
	if err != nil {
		t.Fatal(err)
	}
	w.Wipe()
	// Not without the passphrase.
	dk, _ := v.DataKey()
	defer dk.Wipe()
	x, err := OpenWithKey(path, dk)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Wipe()
	if err := x.SetMeta(nil); err == nil {
		t.Fatal("SetMeta without passphrase accepted")
	}
	if err := v.SetMeta(map[string]string{"": "x"}); err == nil {
		t.Fatal("invalid meta accepted")
	}
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

func TestKeysAddRemove(t *testing.T) {
	useFastKDF(t)
	v, path := newTestVault(t)
	first := v.Keys()[0]
	if err := v.AddKey(first); !errors.Is(err, ErrDuplicateKey) {
		t.Fatalf("duplicate: %v", err)
	}
	// The same key under another comment is still a duplicate.
	dup := first
	dup.Comment = "renamed"
	if err := v.AddKey(dup); !errors.Is(err, ErrDuplicateKey) {
		t.Fatalf("duplicate with other comment: %v", err)
	}
	a1 := newEd25519Key(t, "twin")
	a2 := newEd25519Key(t, "twin")
	a2.Added = time.Time{}
	if err := v.AddKey(a1); err != nil {
		t.Fatal(err)
	}
	if err := v.AddKey(a2); err != nil {
		t.Fatal(err)
	}
	if v.Keys()[2].Added.IsZero() {
		t.Error("zero Added not filled in")
	}
	err := v.RemoveKey("twin")
	if err == nil || errors.Is(err, ErrKeyNotFound) || !strings.Contains(err.Error(), "SHA256:") {
		t.Fatalf("ambiguous: %v", err)
	}
	fp, _ := a2.Fingerprint()
	if err := v.RemoveKey(fp); err != nil {
		t.Fatal(err)
	}
	if err := v.RemoveKey("twin"); err != nil {
		t.Fatal(err)
	}
	if err := v.RemoveKey("twin"); !errors.Is(err, ErrKeyNotFound) {
		t.Fatalf("missing: %v", err)
	}
	// Removing zeroes the vault's copy, not the caller's.
	if bytes.Count(a1.Private, []byte{0}) == len(a1.Private) {
		t.Fatal("caller's key was zeroed")
	}
	w := saveAndReopen(t, v, path)
	if n := len(w.Keys()); n != 1 {
		t.Fatalf("%d keys", n)
	}

	// Keys that must be refused.
	enc := first
	enc.Private = []byte("-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n")
	if err := v.AddKey(enc); err == nil {
		t.Error("garbage key accepted")
	}
	if err := v.AddKey(Key{Comment: strings.Repeat("c", maxComment+1), Private: a1.Private}); err == nil {
		t.Error("long comment accepted")
	}
}

// TestAddKeyRejectsMismatchedPublicKey: a container whose public key blob
// belongs to another key must not go in (listings would show one key and
// signatures come from another).
func TestAddKeyRejectsMismatchedPublicKey(t *testing.T) {
	useFastKDF(t)
	v, _ := newTestVault(t)
	a := newEd25519Key(t, "a")
	b := newEd25519Key(t, "b")
	ra, _ := decodeOpenSSHPEM(a.Private)
	rb, _ := decodeOpenSSHPEM(b.Private)
	oa, _ := parseOpenSSHContainer(ra)
	ob, _ := parseOpenSSHContainer(rb)
	forged := &opensshContainer{PubKey: ob.PubKey}
	k := Key{Comment: "forged", Private: encodePEM(pemTypeOpenSSH, forged.marshalPlain(oa.PrivKey))}
	err := v.AddKey(k)
	if err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("forged key: %v", err)
	}
}

func TestSecrets(t *testing.T) {
	useFastKDF(t)
	v, _ := newTestVault(t)
	val := []byte("value")
	if err := v.SetSecret("b", val); err != nil {
		t.Fatal(err)
	}
	val[0] = 'X'
	got := v.Secret("b")
	if string(got) != "value" {
		t.Fatalf("SetSecret kept the caller's slice: %q", got)
	}
	got[0] = 'Y'
	if string(v.Secret("b")) != "value" {
		t.Fatal("Secret returned the vault's slice")
	}
	if names := v.SecretNames(); !slices.Equal(names, []string{"audit.identity", "b"}) {
		t.Fatalf("names %v", names)
	}
	if !v.DeleteSecret("b") || v.DeleteSecret("b") {
		t.Fatal("DeleteSecret")
	}
	if err := v.SetSecret(strings.Repeat("n", 256), nil); err == nil {
		t.Fatal("long name accepted")
	}
}

func TestWipe(t *testing.T) {
	useFastKDF(t)
	v, _ := newTestVault(t)
	held := [][]byte{v.kek, v.dek, v.keys[0].Private, v.secrets["audit.identity"]}
	v.Wipe()
	for i, b := range held {
		if len(b) == 0 || bytes.Count(b, []byte{0}) != len(b) {
			t.Errorf("buffer %d not zeroed: %x", i, b)
		}
	}
	if err := v.Save(); !errors.Is(err, ErrWiped) {
		t.Errorf("Save: %v", err)
	}
	if _, err := v.DataKey(); !errors.Is(err, ErrWiped) {
		t.Errorf("DataKey: %v", err)
	}
	if err := v.AddKey(newEd25519Key(t, "x")); !errors.Is(err, ErrWiped) {
		t.Errorf("AddKey: %v", err)
	}
	if err := v.SetSecret("x", nil); !errors.Is(err, ErrWiped) {
		t.Errorf("SetSecret: %v", err)
	}
	if len(v.Keys()) != 0 || v.Secret("audit.identity") != nil {
		t.Error("data left after Wipe")
	}
	if err := v.ChangePassphrase([]byte("x"), FloorParams()); !errors.Is(err, ErrWiped) {
		t.Errorf("ChangePassphrase: %v", err)
	}
	v.Wipe() // twice is fine
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
