package gateway

import (
	"crypto/ed25519"
	"crypto/rand"
	"slices"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/sshagent"
)

// The bastion lends a key under the constraints it was added with, also
// once the added copy is gone and the vault's copy stays: a key confirmed
// on every use is confirmed there too, one restricted to destinations
// (which the bastion cannot bind) is not lent.
func TestBastionKeysKeepAddedConstraints(t *testing.T) {
	_, host, _ := ed25519.GenerateKey(rand.Reader)
	hostKey, _ := ssh.NewPublicKey(host.Public())
	for _, c := range []struct {
		name     string
		confirm  bool
		dest     []sshagent.DestConstraint
		lent     bool
		confirms bool
	}{
		{"no constraints", false, nil, true, false},
		{"ssh-add -c", true, nil, true, true},
		{"ssh-add -h", false, []sshagent.DestConstraint{{To: sshagent.Hop{Hostname: "h", Keys: []sshagent.HopKey{{Key: hostKey}}}}}, false, false},
	} {
		_, priv, _ := ed25519.GenerateKey(rand.Reader)
		fresh := func() *sshagent.Identity {
			id, err := sshagent.NewIdentity(slices.Clone(priv), nil, c.name)
			if err != nil {
				t.Fatal(err)
			}
			return id
		}
		keys := &sshagent.Keyring{}
		keys.ReplaceVault([]*sshagent.Identity{fresh()})
		added := fresh()
		added.Source, added.Confirm, added.Dest = sshagent.Added, c.confirm, c.dest
		if err := keys.Add(added); err != nil {
			t.Fatal(err)
		}
		if _, err := keys.Remove(added.Key, ""); err != nil {
			t.Fatal(err)
		}
		lent, err := keySource{keys}.Keys()
		if err != nil {
			t.Fatal(err)
		}
		if got := len(lent) == 1; got != c.lent {
			t.Errorf("%s: lent %d keys", c.name, len(lent))
			continue
		}
		if c.lent && lent[0].Info.Confirm != c.confirms {
			t.Errorf("%s: lent with confirm %v", c.name, lent[0].Info.Confirm)
		}
	}
}
