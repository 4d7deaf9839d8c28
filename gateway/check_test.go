package gateway

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/inventory"
	"github.com/postern/postern/sshagent"
)

// postern check finds a key the agent holds only as a certificate by the
// fingerprint of the key it certifies, as a signature request is decided,
// and so by its comment too: a rule over the comment holds in the dry
// run as it does for the request.
func TestCheckFindsACertificateByItsKey(t *testing.T) {
	g := gatewayWithConfig(t, "[[rule]]\nkey = \"deploy-*\"\napproval = \"per-call\"\n")
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	key, _ := ssh.NewPublicKey(pub)
	ca, _ := ssh.NewSignerFromKey(priv)
	cert := &ssh.Certificate{Key: key, CertType: ssh.UserCert, ValidPrincipals: []string{"deploy"}, ValidBefore: ssh.CertTimeInfinity}
	if err := cert.SignCert(rand.Reader, ca); err != nil {
		t.Fatal(err)
	}
	id, err := sshagent.NewIdentity(priv, cert, "deploy-prod")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.keys.Add(id); err != nil {
		t.Fatal(err)
	}
	res, err := g.opCheck(context.Background(), nil, api.CheckArgs{Key: ssh.FingerprintSHA256(key)})
	if err != nil {
		t.Fatal(err)
	}
	r := res.(api.CheckResult)
	if !r.KeyHeld || r.Mode != audit.ModePerCall {
		t.Fatalf("check of the certified key %s: held %v, mode %s (%s), want held and per-call", ssh.FingerprintSHA256(key), r.KeyHeld, r.Mode, r.Because)
	}
}

// postern check finds a host the inventory names whatever the case it is
// given in, as rules match names: DNS and ssh take "PROD-DB-1" and
// "prod-db-1" for one host, and one the inventory does not have gets the
// strictest mode any host rule could give.
func TestCheckFindsAHostInAnyCase(t *testing.T) {
	g := gatewayWithConfig(t, "[[rule]]\nhost = \"git-*\"\napproval = \"deny\"\n")
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	key, _ := ssh.NewPublicKey(pub)
	var inv *inventory.Inventory
	inv, err := inv.With("prod-db-1", nil, []inventory.Key{inventory.NewKey(key, "test", time.Now())}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	g.engine.SetHosts(inv)
	res, err := g.opCheck(context.Background(), nil, api.CheckArgs{Hosts: []string{"PROD-DB-1"}})
	if err != nil {
		t.Fatal(err)
	}
	if r := res.(api.CheckResult); r.Mode != audit.ModeSession {
		t.Fatalf("check --host PROD-DB-1, a host the inventory names prod-db-1: %s, because %s; want session (the default)", r.Mode, r.Because)
	}
}

// gatewayWithConfig starts a gateway whose configuration file holds cfg.
func gatewayWithConfig(t *testing.T, cfg string) *Gateway {
	t.Helper()
	g, _ := startGatewayWith(t, func(dir string) {
		if err := os.WriteFile(configFile(t, dir), []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
	})
	return g
}

// While the agent is locked it lists no key: postern check says so, for
// a key named by its comment is then matched by that comment alone, and
// a rule on the fingerprint of the key it names is passed over.
func TestCheckSaysTheAgentIsLocked(t *testing.T) {
	dir := gatewayHome(t)
	initTestVault(t, []byte("check pass"))
	g, _, _ := runGateway(t, dir)
	res, err := g.opCheck(context.Background(), nil, api.CheckArgs{Key: "deploy-prod"})
	if err != nil {
		t.Fatal(err)
	}
	if r := res.(api.CheckResult); r.KeyHeld || !r.Locked {
		t.Fatalf("check --key deploy-prod while the vault is locked: held %v, locked %v; want not held, and locked", r.KeyHeld, r.Locked)
	}
}
