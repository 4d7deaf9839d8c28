package gateway

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/vault"
)

// The memory of a passphrase's key derivation (Argon2id: 64 MiB at the
// least) is given back once the unlock or the vault change (a new
// passphrase's included) that needed it is over. The derivation allocates it at once and then works without
// allocating, so the gateway's trimmer could look during it, find it
// live, and see no collection after it: the gateway kept it, idle.
func TestKeyDerivationMemoryGivenBack(t *testing.T) {
	pass := []byte("a passphrase")
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	_, sock := startGatewayWith(t, func(string) { initVaultWithKey(t, pass, priv) })
	c := api.NewClient(sock)
	ctx := context.Background()
	heapObjects := func() uint64 {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	givenBack := func(what string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); heapObjects() >= 32<<20; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("after %s: %d MiB of heap objects held", what, heapObjects()>>20)
			}
		}
	}
	if err := c.Unlock(ctx, api.UnlockArgs{Passphrase: append([]byte(nil), pass...)}); err != nil {
		t.Fatal(err)
	}
	givenBack("an unlock")
	_, priv2, _ := ed25519.GenerateKey(rand.Reader)
	k, err := vault.NewKey(priv2, "second")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ChangeVault(ctx, &api.VaultChange{Passphrase: append([]byte(nil), pass...), Add: []vault.Key{k}}); err != nil {
		t.Fatal(err)
	}
	givenBack("a vault change")
	// A new passphrase is derived within the change, after the old one.
	params := vault.FloorParams()
	if _, err := c.ChangeVault(ctx, &api.VaultChange{Passphrase: append([]byte(nil), pass...), NewPassphrase: []byte("another passphrase"), Params: &params}); err != nil {
		t.Fatal(err)
	}
	givenBack("a passphrase change")
}
