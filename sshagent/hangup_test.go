package sshagent

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
)

// slowDecider waits before it decides, as a card does: until its wait
// has passed (then it allows), or until the request's context ends
// (then it reports that on ended). With late set, it looks at the
// context only after that long, as an engine that puts up a card after
// other work: the client may have hung up before anything watched.
type slowDecider struct {
	wait  atomic.Int64 // a time.Duration
	late  time.Duration
	ended chan struct{}
}

func (d *slowDecider) Decide(ctx context.Context, _ *approvals.Request) approvals.Decision {
	time.Sleep(d.late)
	select {
	case <-time.After(time.Duration(d.wait.Load())):
		return approvals.Decision{Allow: true, Reason: "test"}
	case <-ctx.Done():
		close(d.ended)
		return approvals.Decision{Reason: audit.ReasonCanceled}
	}
}

func (d *slowDecider) Refused(*approvals.Request, audit.Reason) {}

// hangUpWhileDeciding starts a server deciding with d, asks it for a
// signature, hangs up after pause, and waits until d saw the request's
// context end. It returns the server and the key it added.
func hangUpWhileDeciding(t *testing.T, d *slowDecider, pause time.Duration) (*testServer, ssh.PublicKey) {
	t.Helper()
	ts := startServerWith(t, func(s *Server) { s.Decider = d })
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	pub, _ := ssh.NewPublicKey(k.Public())
	ag, c := ts.client(t)
	if err := ag.Add(agent.AddedKey{PrivateKey: k}); err != nil {
		t.Fatal(err)
	}
	c.Write(signFrame(pub, []byte("data")))
	time.Sleep(pause)
	c.Close()
	select {
	case <-d.ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the decision went on waiting for a client that hung up")
	}
	return ts, pub
}

// A request waiting for a person ends when its client hangs up, and a
// request decided slowly leaves its connection as it was: the next
// request on it is answered.
func TestWaitEndsWhenTheClientHangsUp(t *testing.T) {
	d := &slowDecider{ended: make(chan struct{})}
	d.wait.Store(int64(time.Hour))
	ts, pub := hangUpWhileDeciding(t, d, 40*time.Millisecond)

	d.wait.Store(int64(60 * time.Millisecond))
	ag, c := ts.client(t)
	c.SetDeadline(time.Now().Add(10 * time.Second))
	for i := range 2 {
		if _, err := ag.Sign(pub, []byte("data")); err != nil {
			t.Fatalf("signature %d after a slow decision: %v", i+1, err)
		}
	}
}

// The watch of the client's end begins when the decision first waits,
// and finds a client that hung up before then.
func TestHangupBeforeTheWaitBegins(t *testing.T) {
	d := &slowDecider{late: 200 * time.Millisecond, ended: make(chan struct{})}
	d.wait.Store(int64(time.Hour))
	hangUpWhileDeciding(t, d, 0)
}
