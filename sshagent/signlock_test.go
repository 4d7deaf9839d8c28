package sshagent

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"testing"

	"golang.org/x/crypto/ssh/agent"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
)

// lockingDecider allows, and has the agent locked and unlocked again as
// its answer comes back: the person locked the gateway, then unlocked
// it, while the request's card was up.
type lockingDecider struct {
	decider
	keys *Keyring
}

func (d *lockingDecider) Decide(ctx context.Context, r *approvals.Request) approvals.Decision {
	dec := d.decider.Decide(ctx, r)
	d.keys.SetLocked(true)
	d.keys.SetLocked(false)
	return dec
}

// A decision made before a lock authorizes nothing after it, even once
// the agent is unlocked again: a key added with ssh-add, which a lock
// hides and an unlock gives back, does not sign on it.
func TestNoSignatureOnADecisionFromBeforeALock(t *testing.T) {
	var dec *lockingDecider
	ts := startServerWith(t, func(s *Server) {
		dec = &lockingDecider{keys: s.Keys}
		dec.allow.Store(true)
		s.Decider = dec
	})
	ag, _ := ts.client(t)
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	if err := ag.Add(agent.AddedKey{PrivateKey: priv, Comment: "added"}); err != nil {
		t.Fatal(err)
	}
	list, err := ag.List()
	if err != nil || len(list) != 1 {
		t.Fatalf("list = %v, %v", list, err)
	}
	if sig, err := ag.Sign(list[0], []byte("data")); err == nil {
		t.Fatalf("signed (%s) on a decision made before a lock and unlock", sig.Format)
	}
	if got := dec.lastRefusal(); got != audit.ReasonVaultLocked {
		t.Fatalf("refusal recorded as %q, want %q", got, audit.ReasonVaultLocked)
	}
}
