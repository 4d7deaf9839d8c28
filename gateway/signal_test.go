package gateway

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/heldsig"
	"github.com/postern/postern/sshagent"
)

// A SIGUSR1 sent to the gateway is acted on before the next agent
// request is processed, though nothing acts on signals as they arrive
// (Run): it is held (TestMain), and the request takes it.
func TestSignalIsActedOnBeforeTheNextRequest(t *testing.T) {
	if !heldsig.Held(syscall.SIGUSR1) {
		t.Fatal("SIGUSR1 is not held in the test process")
	}
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
	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	if g.agent.Before == nil {
		t.Fatal("the agent server is not asked to act on signals before a request")
	}
	g.agent.Before()
	if ids, err := g.keys.Identities(); len(ids) != 0 {
		t.Fatalf("%d keys left for the request after SIGUSR1 (%v)", len(ids), err)
	}
}

// SIGUSR1 withdraws the pending cards of requests, as a lock does, where
// without a vault they stayed up: an answer given after the person had
// wiped every key still granted (a session for a key added again later)
// or signed (once, with a key of the upstream agent, which SIGUSR1 does
// not wipe).
func TestSignalWithdrawsPendingCards(t *testing.T) {
	g, sock := startPerCallGateway(t)
	e := g.engine
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Each change, the snapshot first: a console follows from then on.
	deltas := make(chan *api.CardsDelta, 4)
	go api.NewClient(sock).FollowCards(ctx, true, func(d *api.CardsDelta) error { deltas <- d; return nil })
	<-deltas
	rq := otherRequest(requester(t))
	decided := make(chan approvals.Decision, 1)
	go func() { decided <- e.Decide(ctx, rq) }()
	select {
	case d := <-deltas:
		if len(d.Cards) != 1 {
			t.Fatalf("the change after the request: %+v", d)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no card")
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	g.agent.Before()
	select {
	case d := <-decided:
		if d.Allow {
			t.Fatalf("allowed: %+v", d)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the card stayed up after SIGUSR1")
	}
	if cards, _ := e.Cards(); len(cards) != 0 {
		t.Fatalf("%d cards pending after SIGUSR1", len(cards))
	}
}
