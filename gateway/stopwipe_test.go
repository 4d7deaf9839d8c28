package gateway

import (
	"crypto/ed25519"
	"crypto/rand"
	"testing"

	"github.com/postern/postern/sshagent"
)

// A gateway that stops wipes every key at once, the keys added with
// ssh-add too, not only the vault's: they would otherwise stay in its
// memory while the bastion's commands are given their grace, and until
// the process is gone.
func TestStopWipesTheAddedKeys(t *testing.T) {
	g, _, stop := runGateway(t, gatewayHome(t))
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	id, err := sshagent.NewIdentity(priv, nil, "added")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.keys.Add(id); err != nil {
		t.Fatal(err)
	}
	stop()
	for _, b := range priv {
		if b != 0 {
			t.Fatal("the key added with ssh-add was not wiped when the gateway stopped")
		}
	}
}
