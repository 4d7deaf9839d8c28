package gateway

import (
	"crypto/ed25519"
	"crypto/rand"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/postern/postern/sshagent"
)

// A SIGUSR1 the gateway caught is acted on before the next agent request
// is processed, even while handleSignals has not taken it yet: as with
// ssh-agent, "kill -USR1" followed by "ssh-add -l" lists nothing.
func TestSignalIsActedOnBeforeTheNextRequest(t *testing.T) {
	dir := gatewayHome(t)
	g, err := New(Options{Socket: filepath.Join(dir, "xdg_runtime_dir", "agent.sock")})
	if err != nil {
		t.Fatal(err)
	}
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	id, err := sshagent.NewIdentity(priv, nil, "k")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.keys.Add(id); err != nil {
		t.Fatal(err)
	}
	g.signals <- syscall.SIGUSR1
	if g.agent.Before == nil {
		t.Fatal("the agent server is not asked to act on signals before a request")
	}
	g.agent.Before()
	if ids, err := g.keys.Identities(); len(ids) != 0 {
		t.Fatalf("%d keys left for the request after SIGUSR1 (%v)", len(ids), err)
	}
}
