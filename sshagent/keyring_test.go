package sshagent

import (
	"crypto/ed25519"
	"crypto/rand"
	"testing"
)

// A key both in the vault and added with ssh-add is listed once, as the
// added copy (its constraints apply); ssh-add -d removes the added copy
// and leaves the vault's, in either order of adding and unlocking.
func TestAddedCopyOfAVaultKey(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	fresh := func(comment string) *Identity {
		id, err := NewIdentity(priv, nil, comment)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	for _, vaultFirst := range []bool{true, false} {
		keys := &Keyring{}
		added := fresh("added")
		added.Confirm = true
		if vaultFirst {
			keys.ReplaceVault([]*Identity{fresh("vault")})
		}
		if err := keys.Add(added); err != nil {
			t.Fatal(err)
		}
		if !vaultFirst {
			keys.ReplaceVault([]*Identity{fresh("vault")})
		}
		ids, _ := keys.Identities()
		if len(ids) != 1 || ids[0].Comment != "added" || !ids[0].Confirm {
			t.Fatalf("vault first %v: listed %d identities, first %q", vaultFirst, len(ids), ids[0].Comment)
		}
		if id, err := keys.Lookup(added.Key); err != nil || id != ids[0] {
			t.Fatalf("vault first %v: lookup gave %v %v", vaultFirst, id, err)
		}
		if err := keys.Remove(added.Key); err != nil {
			t.Fatal(err)
		}
		ids, _ = keys.Identities()
		if len(ids) != 1 || ids[0].Comment != "vault" || ids[0].Source != Vault {
			t.Fatalf("vault first %v: after ssh-add -d, %d identities", vaultFirst, len(ids))
		}
		if err := keys.Remove(added.Key); err == nil {
			t.Fatalf("vault first %v: ssh-add -d removed the vault copy", vaultFirst)
		}
	}
}
