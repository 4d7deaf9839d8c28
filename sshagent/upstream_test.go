package sshagent

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/postern/postern/audit"
)

// upstreamStub is an upstream agent: x/crypto's keyring, served on a
// socket, which records the sign requests and session-binds it gets and
// can hold a signature until the test releases it (a person who has not
// touched the key yet).
type upstreamStub struct {
	agent.ExtendedAgent
	sock string

	mu      sync.Mutex
	signs   int
	binds   [][]byte
	hold    chan struct{} // when set, Sign waits for it to close
	signing chan struct{} // closed when a held Sign has started
	conns   []net.Conn    // every connection it accepted
	open    int           // those still open
	onBind  func()        // when set, called as each session-bind arrives
}

func startUpstream(t testing.TB) *upstreamStub {
	t.Helper()
	u := &upstreamStub{ExtendedAgent: agent.NewKeyring().(agent.ExtendedAgent)}
	dir, err := os.MkdirTemp("", "upstream-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	u.serve(t, filepath.Join(dir, "s"))
	return u
}

// serve serves u at sock until the test ends.
func (u *upstreamStub) serve(t testing.TB, sock string) {
	t.Helper()
	u.sock = sock
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			u.mu.Lock()
			u.conns = append(u.conns, c)
			u.open++
			u.mu.Unlock()
			go func() {
				agent.ServeAgent(u, c)
				c.Close()
				u.mu.Lock()
				u.open--
				u.mu.Unlock()
			}()
		}
	}()
	t.Cleanup(func() { l.Close() })
}

func (u *upstreamStub) SignWithFlags(key ssh.PublicKey, data []byte, flags agent.SignatureFlags) (*ssh.Signature, error) {
	u.mu.Lock()
	u.signs++
	hold, signing := u.hold, u.signing
	u.mu.Unlock()
	if hold != nil {
		close(signing)
		<-hold
	}
	return u.ExtendedAgent.SignWithFlags(key, data, flags)
}

func (u *upstreamStub) Sign(key ssh.PublicKey, data []byte) (*ssh.Signature, error) {
	return u.SignWithFlags(key, data, 0)
}

func (u *upstreamStub) Extension(typ string, contents []byte) ([]byte, error) {
	if typ != ExtSessionBind {
		return nil, agent.ErrExtensionUnsupported
	}
	u.mu.Lock()
	u.binds = append(u.binds, contents)
	onBind := u.onBind
	u.mu.Unlock()
	if onBind != nil {
		onBind()
	}
	return nil, nil
}

func (u *upstreamStub) bindCount() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.binds)
}

// accepted returns how many connections the upstream accepted.
func (u *upstreamStub) accepted() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.conns)
}

// openConns returns how many of its connections are open.
func (u *upstreamStub) openConns() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.open
}

// hangUp closes every connection the upstream accepted, as an upstream
// agent that restarted.
func (u *upstreamStub) hangUp() {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, c := range u.conns {
		c.Close()
	}
}

func (u *upstreamStub) signCount() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.signs
}

// holdSigns makes the next signatures wait until release is called.
func (u *upstreamStub) holdSigns() (started <-chan struct{}, release func()) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.hold, u.signing = make(chan struct{}), make(chan struct{})
	hold := u.hold
	return u.signing, func() { close(hold) }
}

func (u *upstreamStub) addKey(t testing.TB, comment string) ssh.PublicKey {
	t.Helper()
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	if err := u.Add(agent.AddedKey{PrivateKey: k, Comment: comment}); err != nil {
		t.Fatal(err)
	}
	pub, _ := ssh.NewPublicKey(k.Public())
	return pub
}

func startGated(t testing.TB, up *upstreamStub, changes UpstreamChanges) *testServer {
	t.Helper()
	return startServerWith(t, func(s *Server) {
		s.Upstream = &UpstreamAgent{Socket: up.sock, Changes: changes}
	})
}

func TestUpstreamListedAndGated(t *testing.T) {
	up := startUpstream(t)
	upKey := up.addKey(t, "held upstream")
	ts := startGated(t, up, UpstreamRefuse)
	ag, _ := ts.client(t)
	_, own, _ := ed25519.GenerateKey(rand.Reader)
	if err := ag.Add(agent.AddedKey{PrivateKey: own, Comment: "own"}); err != nil {
		t.Fatal(err)
	}
	ownPub, _ := ssh.NewPublicKey(own.Public())
	// The same key in both: listed once, as postern's own.
	if err := up.Add(agent.AddedKey{PrivateKey: own, Comment: "copy upstream"}); err != nil {
		t.Fatal(err)
	}
	list, err := ag.List()
	if err != nil || len(list) != 2 || list[0].Comment != "own" || list[1].Comment != "held upstream" {
		t.Fatalf("list = %v, %v", list, err)
	}

	// Denied: the upstream is not asked.
	ts.dec.allow.Store(false)
	if _, err := ag.Sign(upKey, []byte("data")); err == nil {
		t.Fatal("signed with an upstream key the decision denied")
	}
	if r := ts.dec.last(); r == nil || !r.Key.Upstream || r.Key.Fingerprint != ssh.FingerprintSHA256(upKey) || r.Key.Comment != "held upstream" {
		t.Fatalf("the decision was asked about %+v", r)
	}
	if n := up.signCount(); n != 0 {
		t.Fatalf("the upstream signed %d times for a denied request", n)
	}
	// Allowed: the upstream signs.
	ts.dec.allow.Store(true)
	sig, err := ag.Sign(upKey, []byte("data"))
	if err != nil || upKey.Verify([]byte("data"), sig) != nil || up.signCount() != 1 {
		t.Fatalf("upstream signature: %v, %d signs", err, up.signCount())
	}
	// Postern's own key is signed by postern.
	if _, err := ag.Sign(ownPub, []byte("data")); err != nil || up.signCount() != 1 || ts.dec.last().Key.Upstream {
		t.Fatalf("own key: %v, upstream signs %d", err, up.signCount())
	}
	// A key neither holds.
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	otherPub, _ := ssh.NewPublicKey(other.Public())
	if _, err := ag.Sign(otherPub, []byte("data")); err == nil || ts.dec.lastRefusal() != audit.ReasonKeyNotHeld {
		t.Fatalf("unknown key: %v, refusal %q", err, ts.dec.lastRefusal())
	}
	// Locked: nothing listed, nothing signed, the upstream not asked.
	ts.srv.Keys.SetLocked(true)
	if l, _ := ag.List(); len(l) != 0 {
		t.Fatalf("locked agent lists %v", l)
	}
	if _, err := ag.Sign(upKey, []byte("data")); err == nil || up.signCount() != 1 {
		t.Fatal("a locked agent had the upstream sign")
	}
}

// A key the upstream added after the connection listed is found by a new
// listing; the same connection keeps one upstream connection.
func TestUpstreamLookupRefreshes(t *testing.T) {
	up := startUpstream(t)
	ts := startGated(t, up, UpstreamRefuse)
	ag, _ := ts.client(t)
	if l, err := ag.List(); err != nil || len(l) != 0 {
		t.Fatalf("list = %v %v", l, err)
	}
	k := up.addKey(t, "later")
	if _, err := ag.Sign(k, []byte("x")); err != nil {
		t.Fatalf("sign with a key added upstream after the listing: %v", err)
	}
}

// A client without session bindings that goes leaves its upstream
// connection to the next such client; one that bound its connection does
// not, and a kept connection the upstream closed meanwhile is replaced.
func TestUpstreamConnectionsKept(t *testing.T) {
	up := startUpstream(t)
	upKey := up.addKey(t, "held upstream")
	ts := startGated(t, up, UpstreamRefuse)
	kept := func(n int) {
		t.Helper()
		for {
			p := &ts.srv.Upstream.idle
			p.mu.Lock()
			got := len(p.links)
			p.mu.Unlock()
			if got == n {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
	sign := func(c net.Conn) {
		t.Helper()
		if sig, err := agent.NewClient(c).Sign(upKey, []byte("data")); err != nil || upKey.Verify([]byte("data"), sig) != nil {
			t.Fatalf("sign: %v", err)
		}
	}
	c := ts.rawConn(t)
	sign(c)
	c.Close()
	kept(1)
	c = ts.rawConn(t)
	sign(c)
	if n := up.accepted(); n != 1 {
		t.Fatalf("two clients one after the other: the upstream accepted %d connections", n)
	}
	kept(0)
	c.Close()
	kept(1)

	// Bound: its own connection, closed with it.
	host := newHost(t)
	c = ts.rawConn(t)
	c.Write(frame(append([]byte{msgExtension}, ssh.Marshal(extensionMsg{Name: ExtSessionBind, Contents: host.bind([]byte("sid"), false)})...)))
	if typ := readReply(t, c); typ != msgSuccess {
		t.Fatalf("bind: %d", typ)
	}
	c.Write(frame([]byte{msgRequestIdentities}))
	if typ := readReply(t, c); typ != msgIdentitiesAnswer {
		t.Fatalf("list: %d", typ)
	}
	if n := up.accepted(); n != 2 || up.bindCount() != 1 {
		t.Fatalf("a bound client: %d upstream connections, %d binds", n, up.bindCount())
	}
	c.Close()
	c = ts.rawConn(t)
	sign(c)
	c.Close()
	if n := up.accepted(); n != 2 || up.bindCount() != 1 {
		t.Fatalf("the next client: %d upstream connections, %d binds", n, up.bindCount())
	}
	kept(1)

	// The upstream restarted: the kept connection is closed.
	up.hangUp()
	c = ts.rawConn(t)
	sign(c)
	if n := up.accepted(); n != 3 {
		t.Fatalf("after the upstream hung up: %d connections", n)
	}
}

// An upstream that has not answered within TouchTimeout: the request is
// refused as touch_timeout. A signature that arrives after postern was
// locked (and unlocked) meanwhile is dropped.
func TestUpstreamWaitsAndLocks(t *testing.T) {
	up := startUpstream(t)
	k := up.addKey(t, "slow")
	var wait atomic.Int64
	wait.Store(int64(50 * time.Millisecond))
	ts := startServerWith(t, func(s *Server) {
		s.Upstream = &UpstreamAgent{Socket: up.sock}
		s.TouchTimeout = func() time.Duration { return time.Duration(wait.Load()) }
	})
	ag, _ := ts.client(t)
	_, release := up.holdSigns()
	if _, err := ag.Sign(k, []byte("x")); err == nil || ts.dec.lastRefusal() != audit.ReasonTouchTimeout {
		t.Fatalf("sign: %v, refusal %q", err, ts.dec.lastRefusal())
	}
	release()

	wait.Store(0) // the default: a minute
	started, release := up.holdSigns()
	done := make(chan error, 1)
	go func() { _, err := ag.Sign(k, []byte("x")); done <- err }()
	<-started
	ts.srv.Keys.SetLocked(true)
	ts.srv.Keys.SetLocked(false)
	release()
	if err := <-done; err == nil || ts.dec.lastRefusal() != audit.ReasonVaultLocked {
		t.Fatalf("a signature across a lock: %v, refusal %q", err, ts.dec.lastRefusal())
	}
}

// An RSA key of the upstream agent signs with each algorithm the flags
// ask for, and the signature the upstream makes is passed on.
func TestUpstreamRSAFlags(t *testing.T) {
	up := startUpstream(t)
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	if err := up.Add(agent.AddedKey{PrivateKey: rk, Comment: "rsa"}); err != nil {
		t.Fatal(err)
	}
	pub, _ := ssh.NewPublicKey(rk.Public())
	ts := startGated(t, up, UpstreamRefuse)
	ag, _ := ts.client(t)
	for flags, want := range map[agent.SignatureFlags]string{0: ssh.KeyAlgoRSA, agent.SignatureFlagRsaSha256: ssh.KeyAlgoRSASHA256, agent.SignatureFlagRsaSha512: ssh.KeyAlgoRSASHA512} {
		sig, err := ag.SignWithFlags(pub, []byte("x"), flags)
		if err != nil || sig.Format != want {
			t.Fatalf("flags %d: %v, %v", flags, sig, err)
		}
	}
}

// A certificate the upstream agent holds is decided as the key it
// certifies: a rule naming the key's fingerprint (as ssh-keygen -l
// prints it) holds for a request that names the certificate. So for a
// DSA certificate, which the agent reads itself.
func TestUpstreamCertificateDecidedByItsKey(t *testing.T) {
	k := newDSAKey(t)
	cert, err := parsePublicKey(dsaCertBlob(k))
	if err != nil {
		t.Fatal(err)
	}
	list := append([]byte{msgIdentitiesAnswer}, ssh.Marshal(struct {
		N             uint32
		Blob, Comment []byte
	}{1, cert.Marshal(), []byte("deploy certificate")})...)
	sock := scriptedAgent(t, [][]byte{frame(list)})
	ts := startServerWith(t, func(s *Server) { s.Upstream = &UpstreamAgent{Socket: sock} })
	ts.dec.allow.Store(false)
	ag, _ := ts.client(t)
	if _, err := ag.Sign(cert, []byte("data")); err == nil {
		t.Fatal("signed although the decision denied")
	}
	want := ssh.FingerprintSHA256(plainKey(cert))
	if r := ts.dec.last(); r == nil || r.Key.Fingerprint != want {
		t.Fatalf("the decision was asked about %+v, want the key %s", r, want)
	}
}

// A security key of the upstream agent registered for a web origin signs
// only what SSH signs, as postern's own: a web challenge is refused
// before the decision, and never reaches the upstream.
func TestUpstreamWebOriginSecurityKey(t *testing.T) {
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	web, err := ssh.ParsePublicKey(ssh.Marshal(struct {
		T string
		P []byte
		A string
	}{keyAlgoSKED25519, pub, "https://example.com"}))
	if err != nil {
		t.Fatal(err)
	}
	list := append([]byte{msgIdentitiesAnswer}, ssh.Marshal(struct {
		N             uint32
		Blob, Comment []byte
	}{1, web.Marshal(), []byte("web")})...)
	sock := scriptedAgent(t, [][]byte{frame(list), frame([]byte{msgFailure})})
	ts := startServerWith(t, func(s *Server) { s.Upstream = &UpstreamAgent{Socket: sock} })
	ag, _ := ts.client(t)
	if _, err := ag.Sign(web, []byte("a web challenge")); err == nil {
		t.Fatal("signed")
	}
	if n, r := ts.dec.count(), ts.dec.lastRefusal(); n != 0 || r != audit.ReasonMalformedRequest {
		t.Fatalf("a web-origin security key of the upstream asked to sign a web challenge: %d decisions, refusal %q", n, r)
	}
}
