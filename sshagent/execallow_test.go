package sshagent

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
)

// lateAllowDecider allows once the request's context has ended: an
// answer that arrived as the requester changed, after the watch saw it.
type lateAllowDecider struct {
	began   chan struct{}
	refused chan audit.Reason
}

func (d *lateAllowDecider) Decide(ctx context.Context, _ *approvals.Request) approvals.Decision {
	close(d.began)
	<-ctx.Done()
	return approvals.Decision{Allow: true, Reason: "test"}
}

func (d *lateAllowDecider) Refused(_ *approvals.Request, why audit.Reason) {
	d.refused <- why
}

// An allow that comes back after the requester ran another program on
// its pid signs nothing: the agent checks the requester again after the
// decision, and refuses as identity_mismatch, whatever the decision said.
func TestAllowAfterTheRequesterExecsSignsNothing(t *testing.T) {
	d := &lateAllowDecider{began: make(chan struct{}), refused: make(chan audit.Reason, 4)}
	ts := startServerWith(t, func(s *Server) { s.Decider = d })
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	pub, _ := ssh.NewPublicKey(k.Public())
	ag, _ := ts.client(t)
	if err := ag.Add(agent.AddedKey{PrivateKey: k}); err != nil {
		t.Fatal(err)
	}
	execRequester(t, ts, pub, d.began)
	select {
	case why := <-d.refused:
		if why != audit.ReasonIdentityMismatch {
			t.Fatalf("refused as %s, want identity_mismatch", why)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("an allow that came after the requester ran another program was not refused: the agent signed for the new program")
	}
}
