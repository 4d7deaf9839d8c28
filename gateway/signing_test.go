package gateway

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"net"
	"os"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/vault"
)

// signingGateway is a gateway as "postern vault init" and "postern vault
// add" leave it (the audit log on, one Ed25519 key in the vault), with
// approval = "none", unlocked.
type signingGateway struct {
	g         *Gateway
	sock      string
	pub       ssh.PublicKey
	pass      []byte
	vaultPath string
}

func startSigningGateway(t *testing.T) *signingGateway {
	t.Helper()
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	pub, err := ssh.NewPublicKey(priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	s := &signingGateway{pub: pub, pass: []byte("test pass")}
	s.g, s.sock = startGatewayWith(t, func(dir string) {
		os.WriteFile(configFile(t, dir), []byte("approval = \"none\"\n"), 0o600)
		s.vaultPath = initVaultWithKey(t, s.pass, priv)
	})
	if err := api.NewClient(s.sock).Unlock(context.Background(), api.UnlockArgs{Passphrase: append([]byte(nil), s.pass...)}); err != nil {
		t.Fatal(err)
	}
	return s
}

// client connects to the agent socket.
func (s *signingGateway) client(t *testing.T) agent.ExtendedAgent {
	t.Helper()
	c, err := net.Dial("unix", s.sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return agent.NewClient(c)
}

// initVaultWithKey makes the vault "postern vault init" makes (the audit
// log on) with pass, adds priv to it and returns its path.
func initVaultWithKey(t testing.TB, pass []byte, priv ed25519.PrivateKey) string {
	t.Helper()
	vaultPath := initTestVault(t, pass)
	k, err := vault.NewKey(priv, "test key")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.ChangeVault(&api.VaultChange{Passphrase: append([]byte(nil), pass...), Add: []vault.Key{k}}); err != nil {
		t.Fatal(err)
	}
	return vaultPath
}
