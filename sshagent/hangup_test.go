package sshagent

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/procid"
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
	cause error         // the context's cause, once ended is closed
	began chan struct{} // if not nil, closed when the first decision begins
}

func (d *slowDecider) Decide(ctx context.Context, _ *approvals.Request) approvals.Decision {
	if d.began != nil {
		close(d.began)
	}
	time.Sleep(d.late)
	select {
	case <-time.After(time.Duration(d.wait.Load())):
		return approvals.Decision{Allow: true, Reason: "test"}
	case <-ctx.Done():
		d.cause = context.Cause(ctx)
		close(d.ended)
		return approvals.Decision{Reason: audit.ReasonCanceled}
	}
}

func (d *slowDecider) Refused(*approvals.Request, audit.Reason) {}

// hangUpWhileDeciding starts a server deciding with d, asks it for a
// signature, after pause writes more (the start of a next request, say),
// hangs up, and waits until d saw the request's context end. It returns
// the server and the key it added.
func hangUpWhileDeciding(t *testing.T, d *slowDecider, pause time.Duration, more ...byte) (*testServer, ssh.PublicKey) {
	t.Helper()
	ts, pub, c := deciding(t, d)
	c.Write(signFrame(pub, []byte("data")))
	time.Sleep(pause)
	if len(more) > 0 {
		c.Write(more)
		time.Sleep(pause)
	}
	c.Close()
	select {
	case <-d.ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the decision went on waiting for a client that hung up")
	}
	if d.cause != context.Canceled {
		t.Fatalf("the wait of a client that hung up ended for %v", d.cause)
	}
	return ts, pub
}

// deciding starts a server deciding with d, adds a key, and returns the
// server, the key and a connection to it that nothing else reads.
func deciding(t *testing.T, d *slowDecider) (*testServer, ssh.PublicKey, net.Conn) {
	t.Helper()
	ts := startServerWith(t, func(s *Server) { s.Decider = d })
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	pub, _ := ssh.NewPublicKey(k.Public())
	// The agent client reads the replies on its own connection.
	ag, _ := ts.client(t)
	if err := ag.Add(agent.AddedKey{PrivateKey: k}); err != nil {
		t.Fatal(err)
	}
	return ts, pub, ts.rawConn(t)
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

// A request waiting for a person ends when the process that asked runs
// another program: an exec keeps the pid and the connection, and gives no
// signal, but the requester is gone (nothing would be signed for it after
// the wait), so its card is not left up for nobody, nor its withdrawal
// hidden from the engine's pace.
func TestWaitEndsWhenTheRequesterExecs(t *testing.T) {
	d := &slowDecider{ended: make(chan struct{}), began: make(chan struct{})}
	d.wait.Store(int64(time.Hour))
	ts, pub, _ := deciding(t, d)
	execRequester(t, ts, pub, d.began)
	select {
	case <-d.ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the decision went on waiting for a requester that runs another program")
	}
	if !errors.Is(d.cause, procid.ErrChanged) {
		t.Fatalf("the wait ended for %v, not for the requester's change", d.cause)
	}
}

// A next request sent while the card is up is answered once the card is:
// the watch leaves the bytes it saw where they were.
func TestPipelinedRequestAfterASlowDecision(t *testing.T) {
	d := &slowDecider{ended: make(chan struct{})}
	d.wait.Store(int64(200 * time.Millisecond))
	_, pub, c := deciding(t, d)
	c.SetDeadline(time.Now().Add(10 * time.Second))
	c.Write(signFrame(pub, []byte("first")))
	time.Sleep(50 * time.Millisecond)
	c.Write(signFrame(pub, []byte("second")))
	for i, data := range []string{"first", "second"} {
		typ, p := readAnswer(t, c)
		var m struct{ Sig []byte }
		var sig ssh.Signature
		if typ != msgSignResponse || ssh.Unmarshal(p, &m) != nil || ssh.Unmarshal(m.Sig, &sig) != nil {
			t.Fatalf("reply %d: type %d, not a signature", i+1, typ)
		}
		if err := pub.Verify([]byte(data), &sig); err != nil {
			t.Fatalf("reply %d does not sign %q: %v", i+1, data, err)
		}
	}
}

// execRequester starts a requester that asks ts to sign with pub, waits
// until began shows the request reached the decision, and then has the
// requester run another program (sleep) on its pid, the connection kept.
func execRequester(t *testing.T, ts *testServer, pub ssh.PublicKey, began <-chan struct{}) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SSHAGENT_TEST_ASK="+ts.sock, "SSHAGENT_TEST_FRAME="+hex.EncodeToString(signFrame(pub, []byte("data"))))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	select {
	case <-began:
	case <-time.After(10 * time.Second):
		t.Fatal("the requester's request never reached the decision")
	}
	stdin.Write([]byte("\n")) // now run another program
}
