package gateway

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"path/filepath"
	"testing"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/vault"
)

// A vault change names the vault it is for: a gateway that keeps another
// refuses it as not kept here (the command line then makes it itself),
// and its own vault is left as it was.
func TestVaultChangeForAnotherVaultIsRefused(t *testing.T) {
	pass := []byte("elsewhere pass")
	dir := gatewayHome(t)
	path := initTestVault(t, pass)
	_, sock, _ := runGateway(t, dir)
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := vault.NewKey(priv, "elsewhere")
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "vault")
	_, err = api.NewClient(sock).ChangeVault(context.Background(), &api.VaultChange{Path: other, Passphrase: bytes.Clone(pass), Add: []vault.Key{k}})
	if !api.HasCode(err, api.CodeNotFound) {
		t.Fatalf("a change for %s: %v, want refused as not kept", other, err)
	}
	v, err := vault.Open(path, pass)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Wipe()
	if infos, _ := v.KeyInfos(); len(infos) != 0 || v.Generation() != 0 {
		t.Fatalf("the gateway's vault changed: %d keys, generation %d", len(infos), v.Generation())
	}
}
