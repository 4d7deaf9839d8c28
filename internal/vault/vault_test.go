package vault

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
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
