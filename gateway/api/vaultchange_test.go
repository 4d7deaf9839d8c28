package api

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/atomicfile"
	"github.com/postern/postern/internal/vault"
)

var testPass = []byte("correct horse battery staple")

func newTestVault(t *testing.T) *vault.Vault {
	t.Helper()
	v, err := vault.Create(filepath.Join(t.TempDir(), "vault"), testPass, vault.FloorParams(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Wipe)
	return v
}

func newTestKey(t *testing.T, comment string) vault.Key {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := vault.NewKey(priv, comment)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func reopen(t *testing.T, v *vault.Vault, pass []byte) *vault.Vault {
	t.Helper()
	r, err := vault.Open(v.Path(), pass)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Wipe)
	return r
}

// Each key added or removed and a new passphrase is one event, recorded
// before the vault is written, naming the key, who asked and the
// generation the change writes.
func TestApplyVaultChangeRecordsEachChange(t *testing.T) {
	v := newTestVault(t)
	var got []audit.Event
	record := func(ev audit.Event) error { got = append(got, ev); return nil }
	k1, k2 := newTestKey(t, "one"), newTestKey(t, "two")
	fp1, _ := k1.Fingerprint()
	res, err := ApplyVaultChange(v, &VaultChange{Add: []vault.Key{k1, k2}}, "pid=7", record)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Added) != 2 || res.Added[0].Fingerprint != fp1 || res.Generation != 1 {
		t.Fatalf("result %+v", res)
	}
	if len(got) != 2 || got[0].Type != audit.EventVaultKeyAdded || got[0].Key != fp1 || got[0].Approver != "pid=7" ||
		got[0].Detail["comment"] != "one" || got[0].Detail["generation"] != "1" {
		t.Fatalf("events %+v", got)
	}

	got = nil
	res, err = ApplyVaultChange(v, &VaultChange{Remove: "one"}, "pid=8", record)
	if err != nil || res.Removed == nil || res.Removed.Fingerprint != fp1 {
		t.Fatalf("remove: %+v, %v", res, err)
	}
	if len(got) != 1 || got[0].Type != audit.EventVaultKeyRemoved || got[0].Key != fp1 || got[0].Detail["generation"] != "2" {
		t.Fatalf("events %+v", got)
	}

	got = nil
	p := vault.FloorParams()
	newPass := []byte("another passphrase")
	if _, err := ApplyVaultChange(v, &VaultChange{NewPassphrase: newPass, Params: &p}, "pid=9", record); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Type != audit.EventVaultPassphraseChanged || got[0].Detail["kdf"] != p.String() {
		t.Fatalf("events %+v", got)
	}
	r := reopen(t, v, newPass)
	if infos, _ := r.KeyInfos(); len(infos) != 1 || infos[0].Comment != "two" || r.Generation() != 3 {
		t.Fatalf("vault after the changes: %+v, generation %d", infos, r.Generation())
	}
}

// When the audit log cannot record the change, the vault file is not
// written: no change without its event.
func TestApplyVaultChangeWritesNothingUnrecorded(t *testing.T) {
	v := newTestVault(t)
	full := errors.New("no space left on device")
	_, err := ApplyVaultChange(v, &VaultChange{Add: []vault.Key{newTestKey(t, "one")}}, "pid=7", func(audit.Event) error { return full })
	if !errors.Is(err, full) {
		t.Fatalf("err = %v", err)
	}
	r := reopen(t, v, testPass)
	if infos, _ := r.KeyInfos(); len(infos) != 0 || r.Generation() != 0 {
		t.Fatalf("the vault was written without its event: %+v, generation %d", infos, r.Generation())
	}
	// Nothing to change is refused before anything is recorded.
	if _, err := ApplyVaultChange(v, &VaultChange{}, "pid=7", func(audit.Event) error { t.Fatal("recorded"); return nil }); err == nil {
		t.Fatal("an empty change succeeded")
	}
}

// A change whose events were recorded but whose write then failed (a
// full disk, a crash of the write before its rename) is recorded as not
// written: the next change writes the same generation, and without that
// record the log would show the key added twice over, once for a write
// that never happened.
func TestApplyVaultChangeNotWrittenIsRecorded(t *testing.T) {
	v := newTestVault(t)
	var got []audit.Event
	record := func(ev audit.Event) error { got = append(got, ev); return nil }
	full := errors.New("no space left on device")
	restore := atomicfile.SetBeforeRenameForTest(func(string) error { return full })
	_, err := ApplyVaultChange(v, &VaultChange{Add: []vault.Key{newTestKey(t, "one")}}, "pid=7", record)
	restore()
	if !errors.Is(err, full) {
		t.Fatalf("err = %v", err)
	}
	if r := reopen(t, v, testPass); r.Generation() != 0 {
		t.Fatalf("the vault was written: generation %d", r.Generation())
	}
	if len(got) != 2 || got[0].Type != audit.EventVaultKeyAdded {
		t.Fatalf("the write failed, and the log holds only %+v", got)
	}
	nw := got[1]
	if nw.Type != audit.EventVaultChangeNotWritten || nw.Approver != "pid=7" || nw.Detail["generation"] != "1" || !strings.Contains(nw.Detail["error"], full.Error()) {
		t.Fatalf("the failed write is recorded as %+v", nw)
	}
	// Written but not made durable (the directory sync failed) is
	// written: nothing more is recorded then, which the hook cannot
	// reach; a change that works records its events alone.
	got = nil
	if _, err := ApplyVaultChange(v, &VaultChange{Add: []vault.Key{newTestKey(t, "two")}}, "pid=7", record); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Type != audit.EventVaultKeyAdded || got[0].Detail["generation"] != "1" {
		t.Fatalf("events %+v", got)
	}
}
