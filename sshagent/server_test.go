package sshagent

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/procid"
)

// decider records requests and answers with allow.
type decider struct {
	allow   atomic.Bool
	mu      sync.Mutex
	reqs    []*approvals.Request
	refused []audit.Reason
	// refusedPurpose is the purpose of the last request refused, and
	// refusedNamespace its SSHSIG namespace.
	refusedPurpose   approvals.Purpose
	refusedNamespace string
}

func (d *decider) Decide(_ context.Context, r *approvals.Request) approvals.Decision {
	d.mu.Lock()
	d.reqs = append(d.reqs, r)
	d.mu.Unlock()
	if d.allow.Load() {
		return approvals.Decision{Allow: true, Reason: "test"}
	}
	return approvals.Decision{Reason: "test_deny"}
}

func (d *decider) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.reqs)
}

func (d *decider) last() *approvals.Request {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.reqs) == 0 {
		return nil
	}
	return d.reqs[len(d.reqs)-1]
}

func (d *decider) Refused(r *approvals.Request, reason audit.Reason) {
	d.mu.Lock()
	d.refused = append(d.refused, reason)
	d.refusedPurpose, d.refusedNamespace = r.Purpose, r.Namespace
	d.mu.Unlock()
}

// lastRefusal returns the reason of the last refusal recorded.
func (d *decider) lastRefusal() audit.Reason {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.refused) == 0 {
		return ""
	}
	return d.refused[len(d.refused)-1]
}

type locker struct{ keys *Keyring }

func (l locker) Lock([]byte) error   { l.keys.SetLocked(true); return nil }
func (l locker) Unlock([]byte) error { l.keys.SetLocked(false); return nil }

type testServer struct {
	sock string
	srv  *Server
	dec  *decider
}

// startServer serves an agent on a temporary socket; its log goes to the
// test's log, or to log when given.
func startServer(t testing.TB, log ...*slog.Logger) *testServer {
	t.Helper()
	return startServerWith(t, nil, log...)
}

// startServerWith is startServer with the server's fields changed by
// configure before it serves.
func startServerWith(t testing.TB, configure func(*Server), log ...*slog.Logger) *testServer {
	t.Helper()
	keys := &Keyring{}
	dec := &decider{}
	dec.allow.Store(true)
	srv := &Server{
		Keys:    keys,
		Decider: dec,
		Locker:  locker{keys},
		Procs:   procid.Host,
		Log:     testLogger(t),
	}
	if len(log) > 0 {
		srv.Log = log[0]
	}
	if configure != nil {
		configure(srv)
	}
	dir, err := os.MkdirTemp("", "sshagent-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "s")
	serveOn(t, srv, sock, &Endpoint{Channel: approvals.Channel{Kind: approvals.ChannelAgent}})
	return &testServer{sock: sock, srv: srv, dec: dec}
}

// serveOn serves srv on a socket at sock for ep until the test ends.
func serveOn(t testing.TB, srv *Server, sock string, ep *Endpoint) {
	t.Helper()
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	if err := procid.PassCredentials(l); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		srv.Serve(ctx, l, ep)
		close(done)
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// serveRun serves the agent on another socket too, as a run's own
// (approvals.ChannelRun), and returns its path.
func (ts *testServer) serveRun(t testing.TB, run string) string {
	t.Helper()
	sock := ts.sock + "-" + run
	serveOn(t, ts.srv, sock, &Endpoint{Channel: approvals.Channel{Kind: approvals.ChannelRun, Run: run}})
	return sock
}

// runClient serves the agent on a run's socket too (serveRun) and
// returns x/crypto's client on a connection to it.
func (ts *testServer) runClient(t testing.TB, run string) agent.ExtendedAgent {
	t.Helper()
	c, err := net.Dial("unix", ts.serveRun(t, run))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return agent.NewClient(c)
}

// testLogger sends the agent's log to the test log while the test runs.
// A connection's goroutine can outlive the test (the server stops
// accepting when the test ends, and does not wait for the connections it
// holds), and the testing package forbids a log after the end: the
// lines written then are dropped.
func testLogger(t testing.TB) *slog.Logger {
	w := &testWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		w.ended = true
		w.mu.Unlock()
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct {
	t     testing.TB
	mu    sync.Mutex
	ended bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.ended {
		w.t.Log(string(p))
	}
	return len(p), nil
}

// client dials the agent and returns x/crypto's client on the connection.
// That client reads replies on its own goroutine (it pipelines requests),
// so a test that writes raw frames uses rawConn instead.
func (ts *testServer) client(t testing.TB) (agent.ExtendedAgent, net.Conn) {
	t.Helper()
	c := ts.rawConn(t)
	return agent.NewClient(c), c
}

// rawConn dials the agent for a test that writes and reads frames itself.
func (ts *testServer) rawConn(t testing.TB) net.Conn {
	t.Helper()
	c, err := net.Dial("unix", ts.sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func testKeys(t testing.TB) map[string]any {
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	p521, _ := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	r, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]any{"ed25519": ed, "p256": p256, "p384": p384, "p521": p521, "rsa": r}
}

func TestProtocolRoundTrip(t *testing.T) {
	ts := startServer(t)
	ag, _ := ts.client(t)
	keys := testKeys(t)
	for name, k := range keys {
		if err := ag.Add(agent.AddedKey{PrivateKey: k, Comment: name}); err != nil {
			t.Fatalf("add %s: %v", name, err)
		}
	}
	list, err := ag.List()
	if err != nil || len(list) != len(keys) {
		t.Fatalf("list = %d keys, %v", len(list), err)
	}
	data := []byte("data to sign")
	for _, k := range list {
		flagsets := []agent.SignatureFlags{0}
		if k.Type() == ssh.KeyAlgoRSA {
			flagsets = append(flagsets, agent.SignatureFlagRsaSha256, agent.SignatureFlagRsaSha512)
		}
		for _, fl := range flagsets {
			sig, err := ag.SignWithFlags(k, data, fl)
			if err != nil {
				t.Fatalf("sign %s flags %d: %v", k.Comment, fl, err)
			}
			if err := k.Verify(data, sig); err != nil {
				t.Fatalf("verify %s flags %d (%s): %v", k.Comment, fl, sig.Format, err)
			}
			want := map[agent.SignatureFlags]string{agent.SignatureFlagRsaSha256: ssh.KeyAlgoRSASHA256, agent.SignatureFlagRsaSha512: ssh.KeyAlgoRSASHA512}[fl]
			if want != "" && sig.Format != want {
				t.Fatalf("flags %d gave %s", fl, sig.Format)
			}
		}
	}
	// Remove one, then all.
	if err := ag.Remove(list[0]); err != nil {
		t.Fatal(err)
	}
	if err := ag.Remove(list[0]); err == nil {
		t.Fatal("removing a missing key succeeded")
	}
	if l, _ := ag.List(); len(l) != len(keys)-1 {
		t.Fatalf("after remove: %d keys", len(l))
	}
	if err := ag.RemoveAll(); err != nil {
		t.Fatal(err)
	}
	if l, _ := ag.List(); len(l) != 0 {
		t.Fatalf("after remove all: %d keys", len(l))
	}
}

func TestCertificates(t *testing.T) {
	ts := startServer(t)
	ag, _ := ts.client(t)
	_, caKey, _ := ed25519.GenerateKey(rand.Reader)
	ca, _ := ssh.NewSignerFromKey(caKey)
	for name, k := range testKeys(t) {
		s, _ := ssh.NewSignerFromKey(k)
		cert := &ssh.Certificate{Key: s.PublicKey(), CertType: ssh.UserCert, KeyId: name, ValidPrincipals: []string{"me"}, ValidBefore: ssh.CertTimeInfinity}
		if err := cert.SignCert(rand.Reader, ca); err != nil {
			t.Fatal(err)
		}
		if err := ag.Add(agent.AddedKey{PrivateKey: k, Certificate: cert, Comment: name + "-cert"}); err != nil {
			t.Fatalf("add cert %s: %v", name, err)
		}
		sig, err := ag.Sign(cert, []byte("x"))
		if err != nil {
			t.Fatalf("sign with cert %s: %v", name, err)
		}
		if err := cert.Verify([]byte("x"), sig); err != nil {
			t.Fatal(err)
		}
	}
}

// A run's socket neither locks nor unlocks the agent: the gated program
// cannot unlock what the person locked, guess the passphrase, or lock
// the person out. The agent's own socket does both.
func TestRunCannotLockOrUnlock(t *testing.T) {
	ts := startServer(t)
	run := ts.runClient(t, "R1")
	own, _ := ts.client(t)
	if err := run.Lock([]byte("pass")); err == nil || ts.srv.Keys.Locked() {
		t.Fatalf("a run locked the agent: %v", err)
	}
	if err := own.Lock([]byte("pass")); err != nil || !ts.srv.Keys.Locked() {
		t.Fatalf("the agent's socket did not lock: %v", err)
	}
	if err := run.Unlock([]byte("pass")); err == nil || !ts.srv.Keys.Locked() {
		t.Fatalf("a run unlocked the agent: %v", err)
	}
	if err := own.Unlock([]byte("pass")); err != nil || ts.srv.Keys.Locked() {
		t.Fatalf("the agent's socket did not unlock: %v", err)
	}
}

// A run's socket removes only the keys added through it: the gated
// program does not take away the keys the person added (ssh-add -d, -D),
// nor another run's; the person's socket removes any.
func TestRunRemovesOnlyItsOwnKeys(t *testing.T) {
	ts := startServer(t)
	own, _ := ts.client(t)
	r1, r2 := ts.runClient(t, "R1"), ts.runClient(t, "R2")
	add := func(ag agent.ExtendedAgent, comment string) ssh.PublicKey {
		_, k, _ := ed25519.GenerateKey(rand.Reader)
		if err := ag.Add(agent.AddedKey{PrivateKey: k, Comment: comment}); err != nil {
			t.Fatalf("add %s: %v", comment, err)
		}
		s, _ := ssh.NewSignerFromKey(k)
		return s.PublicKey()
	}
	person, mine, other := add(own, "person"), add(r1, "r1"), add(r2, "r2")
	held := func() (names []string) {
		l, _ := own.List()
		for _, k := range l {
			names = append(names, k.Comment)
		}
		slices.Sort(names)
		return names
	}
	if err := r1.Remove(person); err == nil {
		t.Error("a run removed the person's key")
	}
	if err := r1.Remove(other); err == nil {
		t.Error("a run removed another run's key")
	}
	if err := r1.RemoveAll(); err != nil {
		t.Fatalf("a run's ssh-add -D: %v", err)
	}
	if got := held(); !slices.Equal(got, []string{"person", "r2"}) {
		t.Fatalf("after the run's removals the agent holds %q, want the person's and the other run's", got)
	}
	if err := r1.Remove(mine); err == nil {
		t.Error("the run's own key was still there")
	}
	m2 := add(r1, "r1-again")
	if err := r1.Remove(m2); err != nil {
		t.Errorf("a run could not remove a key it added: %v", err)
	}
	if err := own.Remove(other); err != nil {
		t.Errorf("the person could not remove a run's key: %v", err)
	}
	if err := own.RemoveAll(); err != nil || len(held()) != 0 {
		t.Fatalf("the person's ssh-add -D left %q: %v", held(), err)
	}
}

// The keys a run added are listed after the person's, but on that run's
// own socket: ssh offers keys in the order listed, and sshd's MaxAuthTries
// would end the person's login before the person's key came.
func TestRunsKeysListedLast(t *testing.T) {
	ts := startServer(t)
	person, _ := ts.client(t)
	run := ts.runClient(t, "R1")
	add := func(ag agent.ExtendedAgent, comment string) {
		_, k, _ := ed25519.GenerateKey(rand.Reader)
		if err := ag.Add(agent.AddedKey{PrivateKey: k, Comment: comment}); err != nil {
			t.Fatal(err)
		}
	}
	add(run, "run-1")
	add(run, "run-2")
	add(person, "person")
	order := func(ag agent.ExtendedAgent) (names []string) {
		l, err := ag.List()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range l {
			names = append(names, k.Comment)
		}
		return names
	}
	if got := order(person); !slices.Equal(got, []string{"person", "run-1", "run-2"}) {
		t.Errorf("the person's socket lists %q", got)
	}
	if got := order(run); !slices.Equal(got, []string{"run-1", "run-2", "person"}) {
		t.Errorf("the run's socket lists %q", got)
	}
}

func TestLifetimeAndLock(t *testing.T) {
	ts := startServer(t)
	ag, _ := ts.client(t)
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	if err := ag.Add(agent.AddedKey{PrivateKey: k, LifetimeSecs: 1}); err != nil {
		t.Fatal(err)
	}
	if l, _ := ag.List(); len(l) != 1 {
		t.Fatal("key not listed")
	}
	time.Sleep(1100 * time.Millisecond)
	if l, _ := ag.List(); len(l) != 0 {
		t.Fatal("key outlived its lifetime")
	}
	ag.Add(agent.AddedKey{PrivateKey: k})
	if err := ag.Lock([]byte("pw")); err != nil {
		t.Fatal(err)
	}
	if l, err := ag.List(); err != nil || len(l) != 0 {
		t.Fatalf("locked agent listed %d keys (%v)", len(l), err)
	}
	pub, _ := ssh.NewPublicKey(k.Public())
	if _, err := ag.Sign(pub, []byte("x")); err == nil {
		t.Fatal("locked agent signed")
	}
	if n := ts.dec.count(); n != 0 {
		t.Fatalf("a locked agent asked the decider %d times", n)
	}
	ag.Unlock([]byte("pw"))
	if _, err := ag.Sign(pub, []byte("x")); err != nil {
		t.Fatal(err)
	}
}

func TestDecisionDeniedAndRequestFacts(t *testing.T) {
	ts := startServer(t)
	ag, _ := ts.client(t)
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	ag.Add(agent.AddedKey{PrivateKey: k, Comment: "c", ConfirmBeforeUse: true})
	pub, _ := ssh.NewPublicKey(k.Public())
	ts.dec.allow.Store(false)
	if _, err := ag.Sign(pub, []byte("x")); err == nil {
		t.Fatal("signed although the decider said no")
	}
	r := ts.dec.last()
	if r.Requester.PID != os.Getpid() || !r.Key.Confirm || r.Key.Comment != "c" || r.Purpose != approvals.PurposeOther {
		t.Fatalf("request facts: %+v", r)
	}
	// An SSHSIG blob reports its namespace.
	ts.dec.allow.Store(true)
	blob := append([]byte("SSHSIG"), ssh.Marshal(struct {
		NS, Res, Alg string
		H            []byte
	}{"git", "", "sha512", make([]byte, 64)})...)
	if _, err := ag.Sign(pub, blob); err != nil {
		t.Fatal(err)
	}
	if r := ts.dec.last(); r.Purpose != approvals.PurposeSSHSig || r.Namespace != "git" {
		t.Fatalf("sshsig request: %+v", r)
	}
}

// hostSigner makes a host key and session-bind messages signed with it.
type hostSigner struct{ ssh.Signer }

func newHost(t testing.TB) hostSigner {
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	s, _ := ssh.NewSignerFromKey(k)
	return hostSigner{s}
}

func (h hostSigner) bind(sid []byte, fwd bool) []byte {
	sig, _ := h.Sign(rand.Reader, sid)
	return ssh.Marshal(sessionBindMsg{HostKey: h.PublicKey().Marshal(), SessionID: sid, Signature: ssh.Marshal(sig), Forwarding: fwd})
}

func userauth(sid []byte, user string, key ssh.PublicKey, hostKey ssh.PublicKey) []byte {
	m := userauthMsg{SessionID: sid, Type: msgUserAuthRequest, User: user, Service: "ssh-connection", Method: "publickey", HasSig: true, Algo: key.Type(), PubKey: key.Marshal()}
	if hostKey != nil {
		m.Method = "publickey-hostbound-v00@openssh.com"
		m.Rest = ssh.Marshal(struct{ K []byte }{hostKey.Marshal()})
	}
	return ssh.Marshal(m)
}

func TestSessionBind(t *testing.T) {
	ts := startServer(t)
	ag, _ := ts.client(t)
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	ag.Add(agent.AddedKey{PrivateKey: k})
	pub, _ := ssh.NewPublicKey(k.Public())
	host, other := newHost(t), newHost(t)
	sid := []byte("session-identifier-0123456789abcdef")

	// A bind whose signature is not the host's is refused, and the
	// connection is not trusted afterwards.
	bad := ssh.Marshal(sessionBindMsg{HostKey: host.PublicKey().Marshal(), SessionID: sid, Signature: ssh.Marshal(&ssh.Signature{Format: "ssh-ed25519", Blob: make([]byte, 64)})})
	if _, err := ag.Extension(ExtSessionBind, bad); err == nil {
		t.Fatal("bad session-bind signature accepted")
	}
	if _, err := ag.List(); err == nil {
		t.Fatal("listing after a failed bind succeeded")
	}

	// A good bind records the destination the decider sees.
	ag2, _ := ts.client(t)
	if _, err := ag2.Extension(ExtSessionBind, host.bind(sid, false)); err != nil {
		t.Fatal(err)
	}
	if _, err := ag2.Sign(pub, userauth(sid, "git", pub, host.PublicKey())); err != nil {
		t.Fatal(err)
	}
	r := ts.dec.last()
	if r.Purpose != approvals.PurposeAuth || r.Dest == nil || r.Dest.Fingerprint() != ssh.FingerprintSHA256(host.PublicKey()) || r.Dest.User != "git" || r.Dest.Forwarding {
		t.Fatalf("destination: %+v", r.Dest)
	}
	// Another session id than the bound one is refused.
	if _, err := ag2.Sign(pub, userauth([]byte("another-session-id"), "git", pub, nil)); err == nil {
		t.Fatal("signed a userauth request for another session")
	}
	// So is a hostbound request naming another host key.
	if _, err := ag2.Sign(pub, userauth(sid, "git", pub, other.PublicKey())); err == nil {
		t.Fatal("signed a hostbound request for another host")
	}
	// A connection bound for authentication cannot be bound again.
	if _, err := ag2.Extension(ExtSessionBind, other.bind([]byte("sid-2"), false)); err == nil {
		t.Fatal("rebinding an authentication connection succeeded")
	}

	// Forwarding binds: a chain is allowed, the same sid with another key
	// is not, and the decider sees forwarding.
	ag3, _ := ts.client(t)
	if _, err := ag3.Extension(ExtSessionBind, host.bind([]byte("hop-1"), true)); err != nil {
		t.Fatal(err)
	}
	if _, err := ag3.Extension(ExtSessionBind, other.bind([]byte("hop-1"), true)); err == nil {
		t.Fatal("session id rebound to another key")
	}
	ag4, _ := ts.client(t)
	ag4.Extension(ExtSessionBind, host.bind([]byte("hop-1"), true))
	if _, err := ag4.Extension(ExtSessionBind, other.bind([]byte("hop-2"), false)); err != nil {
		t.Fatal(err)
	}
	if _, err := ag4.Sign(pub, userauth([]byte("hop-2"), "u", pub, other.PublicKey())); err != nil {
		t.Fatal(err)
	}
	if r := ts.dec.last(); !r.Dest.Forwarding || r.Dest.Hops != 2 {
		t.Fatalf("forwarded destination: %+v", r.Dest)
	}
}

func TestQueryExtension(t *testing.T) {
	ts := startServer(t)
	ag, _ := ts.client(t)
	res, err := ag.Extension(ExtQuery, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res[0] != msgExtensionResponse {
		t.Fatalf("reply type %d", res[0])
	}
	var names []string
	rest := res[1:]
	for len(rest) > 0 {
		var s struct {
			S    string
			Rest []byte `ssh:"rest"`
		}
		if err := ssh.Unmarshal(rest, &s); err != nil {
			t.Fatal(err)
		}
		names = append(names, s.S)
		rest = s.Rest
	}
	if len(names) != 2 || names[0] != "query" || names[1] != ExtSessionBind {
		t.Fatalf("query reply %q", names)
	}
	if _, err := ag.Extension("no-such@example.com", nil); !errors.Is(err, agent.ErrExtensionUnsupported) {
		t.Fatalf("unknown extension: %v", err)
	}
}

func TestRestrictDestination(t *testing.T) {
	ts := startServer(t)
	ag, _ := ts.client(t)
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	pub, _ := ssh.NewPublicKey(k.Public())
	allowed, denied := newHost(t), newHost(t)
	constraint := ssh.Marshal(struct{ From, To, R []byte }{destHop("", ""), destHop("", "allowed", allowed.PublicKey()), nil})
	details := ssh.Marshal(struct{ C []byte }{constraint})
	if err := ag.Add(agent.AddedKey{PrivateKey: k, ConstraintExtensions: []agent.ConstraintExtension{{ExtensionName: ExtRestrictDestination, ExtensionDetails: details}}}); err != nil {
		t.Fatal(err)
	}
	// Unbound (local) connections see the key but cannot sign with it.
	if l, _ := ag.List(); len(l) != 1 {
		t.Fatal("restricted key hidden from a local listing")
	}
	if _, err := ag.Sign(pub, []byte("x")); err == nil {
		t.Fatal("restricted key signed on an unbound connection")
	}
	ok, _ := ts.client(t)
	ok.Extension(ExtSessionBind, allowed.bind([]byte("s1"), false))
	if _, err := ok.Sign(pub, userauth([]byte("s1"), "u", pub, allowed.PublicKey())); err != nil {
		t.Fatalf("permitted destination refused: %v", err)
	}
	no, _ := ts.client(t)
	no.Extension(ExtSessionBind, denied.bind([]byte("s2"), false))
	if l, _ := no.List(); len(l) != 0 {
		t.Fatal("restricted key listed on a connection to another host")
	}
	if _, err := no.Sign(pub, userauth([]byte("s2"), "u", pub, denied.PublicKey())); err == nil {
		t.Fatal("restricted key signed for another host")
	}
	// An unknown constraint is refused rather than ignored.
	if err := ag.Add(agent.AddedKey{PrivateKey: k, ConstraintExtensions: []agent.ConstraintExtension{{ExtensionName: "x@example.com"}}}); err == nil {
		t.Fatal("unknown constraint accepted")
	}
}

func writeFrame(c net.Conn, b []byte) {
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(b)))
	c.Write(append(hdr[:], b...))
}

func TestMalformedAndOversized(t *testing.T) {
	ts := startServer(t)
	// Oversized: the connection is closed without reading the body.
	c := ts.rawConn(t)
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], MaxMessage+1)
	c.Write(hdr[:])
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("oversized request: read %v, want EOF", err)
	}
	// Malformed messages get SSH_AGENT_FAILURE and the connection lives.
	c2 := ts.rawConn(t)
	for _, m := range [][]byte{{13}, {13, 0, 0, 0, 99}, {17, 0, 0}, {27, 0, 0, 0, 200}, {250}, {25, 0, 0, 0, 11, 's', 's', 'h'}} {
		writeFrame(c2, m)
		reply := make([]byte, 5)
		c2.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadFull(c2, reply); err != nil {
			t.Fatalf("message %x: %v", m, err)
		}
		if reply[4] != 5 && reply[4] != 28 {
			t.Fatalf("message %x: reply %x, want failure", m, reply)
		}
	}
	// A length of zero closes the connection.
	writeFrame(c2, nil)
	c2.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c2.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("empty request: %v", err)
	}
}

func TestConcurrentClients(t *testing.T) {
	ts := startServer(t)
	ag, _ := ts.client(t)
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	ag.Add(agent.AddedKey{PrivateKey: k})
	pub, _ := ssh.NewPublicKey(k.Public())
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("unix", ts.sock)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			cl := agent.NewClient(c)
			for j := 0; j < 5; j++ {
				data := []byte{byte(i), byte(j)}
				sig, err := cl.Sign(pub, data)
				if err == nil {
					err = pub.Verify(data, sig)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// FuzzRequest feeds arbitrary messages to the protocol handler of a
// connection whose keyring holds keys and bindings: no input may panic,
// also where the server would recover (process) and answer a failure.
func FuzzRequest(f *testing.F) {
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	pub, _ := ssh.NewPublicKey(k.Public())
	host := newHost(f)
	f.Add([]byte{11})
	f.Add(append([]byte{13}, ssh.Marshal(struct {
		K, D []byte
		F    uint32
	}{pub.Marshal(), []byte("x"), 0})...))
	f.Add(append([]byte{27}, ssh.Marshal(struct {
		N string
		R []byte `ssh:"rest"`
	}{ExtSessionBind, host.bind([]byte("sid"), false)})...))
	f.Add(append([]byte{25}, ssh.Marshal(struct{ T string }{"ssh-ed25519"})...))
	for _, m := range addMessages(f) {
		f.Add(m)
	}
	f.Add(append([]byte{msgAddSmartcardKeyConstrained}, ssh.Marshal(struct{ P, PIN string }{"/nonexistent/p11.so", "1234"})...))
	f.Add(append([]byte{msgRemoveSmartcardKey}, ssh.Marshal(struct{ P, PIN string }{"/nonexistent/p11.so", ""})...))
	keys := &Keyring{}
	id, _ := NewIdentity(k, nil, "fuzz")
	keys.Add(id)
	// No provider is ever allowed: fuzzing must not start helpers.
	srv := &Server{Keys: keys, Decider: &decider{}, Locker: locker{keys}, Procs: procid.Host, Log: slog.New(slog.DiscardHandler), Providers: "!*"}
	self, err := procid.Host.Pin(os.Getpid())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		if len(msg) == 0 || len(msg) > MaxMessage {
			return
		}
		cn := &conn{srv: srv, ep: &Endpoint{}, ctx: context.Background(), peer: self}
		cn.log = connLog{cn}
		reply := cn.dispatch(msg)
		if len(reply) < 5 {
			t.Fatalf("reply too short: %x", reply)
		}
	})
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
