package vault

import (
	"errors"
	"strings"
	"testing"
)

// A vault whose contents a newer postern wrote (a body version this build
// does not know, under a seal the passphrase opens, so no edit) is
// refused as newer, with the advice to upgrade: never called corrupt or
// tampered with, with the advice to move it aside and create a new vault,
// which would leave its keys behind.
func TestNewerBodyVersionIsNotCalledCorrupt(t *testing.T) {
	useFastKDF(t)
	v, path := newTestVault(t)
	fp, err := parseFile(mustRead(t, path))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := unseal(v.dek, fp.body, fp.bodyAAD)
	if err != nil {
		t.Fatal(err)
	}
	plain[0] = bodyVersion2 + 1
	mustWrite(t, path, assemble(fp.bodyAAD, seal(v.dek, plain, fp.bodyAAD, nil)))

	_, err = Open(path, testPass)
	if err == nil {
		t.Fatal("a vault of a newer body version opened")
	}
	msg := err.Error()
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(msg, path) || !strings.Contains(msg, "version 3") ||
		!strings.Contains(msg, "upgrade postern") || strings.Contains(msg, "tampered") || strings.Contains(msg, "create a new vault") {
		t.Fatalf("a vault of a newer body version: %v", err)
	}
}
