package vault

import (
	"bytes"
	"encoding/hex"
	"path/filepath"
	"testing"
	"time"
)

// testdata/v1.vault was written by the format-1 code as it stood before the
// format code moved to cryptobyte (commit 46b77a7): Create with the real
// Argon2id at FloorParams, an Ed25519 key saved, an ECDSA key added and
// saved again. Every later build must keep opening it, and must encode
// what it reads back to the very same bytes.
const (
	goldenFile = "testdata/v1.vault"
	goldenPass = "golden vault passphrase"
	goldenID   = "dbc8d47f871f9040044ea034b01b7f72"
)

func TestGoldenVaultOpens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vault")
	mustWrite(t, path, mustRead(t, goldenFile))

	meta, id, err := ReadMeta(path)
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(id[:]) != goldenID || meta["audit.recipient"] != "age1goldenrecipient" || meta["created-by"] != "postern 46b77a7" || len(meta) != 2 {
		t.Fatalf("ReadMeta: %x %v", id, meta)
	}

	v, err := Open(path, []byte(goldenPass))
	if err != nil {
		t.Fatal(err)
	}
	defer v.Wipe()
	if vid := v.ID(); v.Generation() != 2 || v.Params() != FloorParams() || hex.EncodeToString(vid[:]) != goldenID {
		t.Fatalf("generation %d, params %v, id %x", v.Generation(), v.Params(), v.ID())
	}
	want := []struct{ fp, comment, added string }{
		{"SHA256:E/FXT9zBWsGg14ZTCqfplUbQdIwIlon+IpHxGgSpVsI", "golden ed25519", "2025-03-04T05:06:07.123456789Z"},
		{"SHA256:U0H88m/GOBvlakSsWwoEqm4graxHBAt8Gc3dFJotTuI", "golden ecdsa", "2025-03-05T00:00:00Z"},
	}
	infos, err := v.KeyInfos()
	if err != nil || len(infos) != len(want) {
		t.Fatalf("keys: %v %v", infos, err)
	}
	for i, w := range want {
		got := infos[i]
		if got.Fingerprint != w.fp || got.Comment != w.comment || got.Added.Format(time.RFC3339Nano) != w.added {
			t.Errorf("key %d: %s %q %v", i, got.Fingerprint, got.Comment, got.Added)
		}
	}
	for _, k := range v.Keys() {
		if _, err := k.Signer(); err != nil {
			t.Errorf("key %q: %v", k.Comment, err)
		}
		k.Wipe()
	}
	if s := v.Secret("audit.identity"); string(s) != "AGE-SECRET-KEY-1GOLDEN" {
		t.Errorf("secret audit.identity = %q", s)
	}
	if s := v.Secret("keychain.account"); !bytes.Equal(s, []byte{0, 1, 2, 0xff}) {
		t.Errorf("secret keychain.account = %x", s)
	}
	if names := v.SecretNames(); len(names) != 2 {
		t.Errorf("secrets %v", names)
	}

	// The data key opens it too, and a save goes through.
	dk, err := v.DataKey()
	if err != nil {
		t.Fatal(err)
	}
	defer dk.Wipe()
	w, err := OpenWithKey(path, dk)
	if err != nil {
		t.Fatal(err)
	}
	w.Wipe()
	if err := v.Save(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path, []byte("not the passphrase")); err == nil {
		t.Fatal("a wrong passphrase opened the vault")
	}
}

// TestGoldenVaultCanonical re-encodes every section of the committed file
// with today's encoders and expects the original bytes.
func TestGoldenVaultCanonical(t *testing.T) {
	file := mustRead(t, goldenFile)
	fp, err := parseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	aad, err := fp.hdr.marshal()
	if err != nil || !bytes.Equal(aad, fp.aad) {
		t.Fatalf("header does not re-encode to the file's bytes (%v)", err)
	}
	if !bytes.Equal(bodyAAD(fp.aad, fp.wrap), fp.bodyAAD) || !bytes.Equal(assemble(fp.bodyAAD, fp.body), file) {
		t.Fatal("sections do not reassemble to the file")
	}
	v, err := Open(goldenFile, []byte(goldenPass))
	if err != nil {
		t.Fatal(err)
	}
	defer v.Wipe()
	plain, err := unseal(v.dek, fp.body, fp.bodyAAD)
	if err != nil {
		t.Fatal(err)
	}
	b, err := decodeBody(plain)
	if err != nil {
		t.Fatal(err)
	}
	defer wipeBody(b)
	again, err := encodeBody(b)
	if err != nil || !bytes.Equal(again, plain) {
		t.Fatalf("body does not re-encode to the sealed plaintext (%v)", err)
	}
}
