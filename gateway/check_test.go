package gateway

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/sshagent"
)

// postern check finds a key the agent holds only as a certificate by the
// fingerprint of the key it certifies, as a signature request is decided,
// and so by its comment too: a rule over the comment holds in the dry
// run as it does for the request.
func TestCheckFindsACertificateByItsKey(t *testing.T) {
	g, _ := startGatewayWith(t, func(dir string) {
		rules := "[[rule]]\nkey = \"deploy-*\"\napproval = \"per-call\"\n"
		if err := os.WriteFile(configFile(t, dir), []byte(rules), 0o600); err != nil {
			t.Fatal(err)
		}
	})
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
