package sshagent

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/sys/unix"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/knownhosts"
	"github.com/postern/postern/internal/procid"
)

// heldRecorder is an audit log whose records started with Start become
// durable only when the test says so: a disk that has not finished its
// fdatasync.
type heldRecorder struct {
	mu      sync.Mutex
	events  []audit.Event
	waiting chan struct{} // a record's wait was called
	outcome chan error    // what that wait returns, when the test sends it
}

func newHeldRecorder() *heldRecorder {
	return &heldRecorder{waiting: make(chan struct{}, 1), outcome: make(chan error, 1)}
}

func (r *heldRecorder) Append(e audit.Event) error {
	return r.Start(e)()
}

func (r *heldRecorder) Start(e audit.Event) func() error {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
	return func() error {
		r.waiting <- struct{}{}
		return <-r.outcome
	}
}

func (r *heldRecorder) recorded() []audit.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]audit.Event(nil), r.events...)
}

// startRecorded serves an agent whose decisions are the approval
// engine's, with approval = "none" and rec as its audit log.
func startRecorded(t *testing.T, rec approvals.Recorder, configure func(*Server)) *testServer {
	t.Helper()
	eng := approvals.NewEngine(approvals.Config{
		Procs: procid.Host, BootID: "boot", Vault: func() (bool, uint64) { return false, 1 },
		Policy: &approvals.Policy{Mode: audit.ModeNone, CardTimeout: time.Minute, Hosts: knownhosts.Open(nil), Scope: approvals.ScopeKey},
		Audit:  rec,
	})
	return startServerWith(t, func(s *Server) {
		s.Decider = eng
		if configure != nil {
			configure(s)
		}
	})
}

// signFrame is a sign request for key, framed.
func signFrame(key ssh.PublicKey, data []byte) []byte {
	return frame(append([]byte{msgSignRequest}, ssh.Marshal(signRequestMsg{KeyBlob: key.Marshal(), Data: data})...))
}

// awaitWait waits until the agent waits for a record of rec, and fails
// the test if a reply reaches c before that, or when it does.
func awaitWait(t *testing.T, rec *heldRecorder, c net.Conn, when string) {
	t.Helper()
	for {
		select {
		case <-rec.waiting:
			nothingToRead(t, c, when)
			return
		default:
		}
		nothingToRead(t, c, when)
		time.Sleep(time.Millisecond)
	}
}

// nothingToRead fails the test when c has bytes to read now: a reply the
// agent sent before the record it waits for was durable. It peeks without
// waiting and leaves the bytes where they are.
func nothingToRead(t *testing.T, c net.Conn, when string) {
	t.Helper()
	rc, err := c.(*net.UnixConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	var perr error
	if err := rc.Control(func(fd uintptr) {
		var b [1]byte
		n, _, perr = unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
	}); err != nil {
		t.Fatal(err)
	}
	if n > 0 || (perr != nil && perr != unix.EAGAIN) {
		t.Fatalf("%s: the client could read the reply (%d bytes, %v) before the record was durable", when, n, perr)
	}
}

// A signature leaves the agent only once its record is durable; a record
// that fails takes the signature with it.
func TestSignatureWaitsForItsRecord(t *testing.T) {
	rec := newHeldRecorder()
	ts := startRecorded(t, rec, nil)
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	pub, _ := ssh.NewPublicKey(priv.Public())
	ag, _ := ts.client(t)
	if err := ag.Add(agent.AddedKey{PrivateKey: priv}); err != nil {
		t.Fatal(err)
	}
	data := []byte("data to sign")
	for _, outcome := range []error{nil, errors.New("fdatasync: input/output error")} {
		c := ts.rawConn(t)
		c.Write(signFrame(pub, data))
		awaitWait(t, rec, c, "local key")
		rec.outcome <- outcome
		typ, body := readAnswer(t, c)
		if outcome != nil {
			if typ != msgFailure {
				t.Fatalf("the record failed and the agent answered %d", typ)
			}
			continue
		}
		var resp struct{ Sig []byte }
		var sig ssh.Signature
		if typ != msgSignResponse || ssh.Unmarshal(body, &resp) != nil || ssh.Unmarshal(resp.Sig, &sig) != nil || pub.Verify(data, &sig) != nil {
			t.Fatalf("the record was durable and the agent answered %d %x", typ, body)
		}
	}
	if evs := rec.recorded(); len(evs) != 2 || evs[0].Type != audit.EventSign || evs[1].Type != audit.EventSign {
		t.Fatalf("recorded %+v", evs)
	}
}

// With an upstream agent's key, the request goes to the upstream first
// and the record is made durable while the upstream signs; the signature
// leaves only once the record is durable. When the upstream then fails,
// a second record says so: the first one does not stand alone claiming a
// signature that was never given.
func TestUpstreamSignsWhileItsRecordSyncs(t *testing.T) {
	up := startUpstream(t)
	upKey := up.addKey(t, "held upstream")
	rec := newHeldRecorder()
	ts := startRecorded(t, rec, func(s *Server) { s.Upstream = &UpstreamAgent{Socket: up.sock} })
	if _, err := agent.NewClient(ts.rawConn(t)).List(); err != nil {
		t.Fatal(err)
	}
	data := []byte("data to sign")

	c := ts.rawConn(t)
	started, release := up.holdSigns()
	c.Write(signFrame(upKey, data))
	<-started // the upstream signs...
	// ...while the agent writes the record.
	awaitWait(t, rec, c, "upstream key")
	if evs := rec.recorded(); len(evs) != 1 || evs[0].Type != audit.EventSign || evs[0].Detail["key_holder"] != "upstream" {
		t.Fatalf("while the upstream signed, the log had %+v", evs)
	}
	release()
	// The upstream has answered, or will: the record is not durable.
	nothingToRead(t, c, "upstream key, signed")
	rec.outcome <- nil
	if typ, body := readAnswer(t, c); typ != msgSignResponse {
		t.Fatalf("the agent answered %d %x", typ, body)
	}

	// The upstream no longer holds the key it listed: it refuses, after
	// the allow was recorded.
	up.mu.Lock()
	up.hold = nil
	up.mu.Unlock()
	if err := up.Remove(upKey); err != nil {
		t.Fatal(err)
	}
	c.Write(signFrame(upKey, data))
	awaitWait(t, rec, c, "upstream key")
	rec.outcome <- nil
	awaitWait(t, rec, c, "the refusal's record") // the second record
	rec.outcome <- nil
	if typ, _ := readAnswer(t, c); typ != msgFailure {
		t.Fatalf("the upstream refused and the agent answered %d", typ)
	}
	evs := rec.recorded()
	if len(evs) != 3 || evs[1].Type != audit.EventSign || evs[2].Type != audit.EventActionDenied || evs[2].Reason != audit.ReasonSigningFailed || evs[2].Key != evs[1].Key {
		t.Fatalf("recorded %+v", evs)
	}
}

// When the record of an upstream signature cannot be written, the client
// is refused at once: the agent does not wait for the upstream's answer
// (a person's confirmation, a touch) to a signature that cannot leave,
// and the upstream's connection is closed. The next request is served on
// a new one.
func TestUpstreamRecordFailsFirst(t *testing.T) {
	up := startUpstream(t)
	upKey := up.addKey(t, "held upstream")
	rec := newHeldRecorder()
	ts := startRecorded(t, rec, func(s *Server) { s.Upstream = &UpstreamAgent{Socket: up.sock} })
	data := []byte("data to sign")
	if _, err := agent.NewClient(ts.rawConn(t)).List(); err != nil {
		t.Fatal(err)
	}
	c := ts.rawConn(t)
	started, release := up.holdSigns()
	defer release()
	c.Write(signFrame(upKey, data))
	<-started
	awaitWait(t, rec, c, "upstream key")
	rec.outcome <- errors.New("fdatasync: no space left on device")
	if typ, _ := readAnswer(t, c); typ != msgFailure {
		t.Fatalf("the record failed and the agent answered %d", typ)
	}
	links := up.accepted()
	if n := up.signCount(); n != 1 {
		t.Fatalf("the upstream was asked %d times", n)
	}
	// The held signature is still waiting at the upstream: the agent did
	// not wait for it. The next request goes out on a new connection.
	up.mu.Lock()
	up.hold = nil
	up.mu.Unlock()
	c.Write(signFrame(upKey, data))
	awaitWait(t, rec, c, "upstream key, again")
	rec.outcome <- nil
	if typ, body := readAnswer(t, c); typ != msgSignResponse {
		t.Fatalf("the agent answered %d %x", typ, body)
	}
	if n := up.accepted(); n != links+1 {
		t.Fatalf("the upstream accepted %d connections, want %d", n, links+1)
	}
}
