package sshagent

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
}

func startUpstream(t testing.TB) *upstreamStub {
	t.Helper()
	u := &upstreamStub{ExtendedAgent: agent.NewKeyring().(agent.ExtendedAgent)}
	dir, err := os.MkdirTemp("", "upstream-")
	if err != nil {
		t.Fatal(err)
	}
	u.sock = filepath.Join(dir, "s")
	l, err := net.Listen("unix", u.sock)
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
	t.Cleanup(func() { l.Close(); os.RemoveAll(dir) })
	return u
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
	u.mu.Unlock()
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

// The session bindings postern verified go to the upstream, in order:
// those before the upstream connection opened, and those after.
func TestUpstreamGetsSessionBinds(t *testing.T) {
	up := startUpstream(t)
	ts := startGated(t, up, UpstreamRefuse)
	call := rawCaller(t, ts.rawConn(t))
	host1, host2 := newHost(t), newHost(t)
	b1, b2 := host1.bind([]byte("session-one"), true), host2.bind([]byte("session-two"), false)
	if r := call(ext(b1)); r != msgSuccess {
		t.Fatalf("bind: %d", r)
	}
	if up.bindCount() != 0 {
		t.Fatal("the upstream connection opened before it was needed")
	}
	if r := call([]byte{msgRequestIdentities}); r != msgIdentitiesAnswer {
		t.Fatalf("list: %d", r)
	}
	if r := call(ext(b2)); r != msgSuccess {
		t.Fatalf("bind: %d", r)
	}
	// A bind postern refuses never reaches the upstream.
	bad := ssh.Marshal(sessionBindMsg{HostKey: host1.PublicKey().Marshal(), SessionID: []byte("s"), Signature: ssh.Marshal(&ssh.Signature{Format: "ssh-ed25519", Blob: make([]byte, 64)})})
	if r := call(ext(bad)); r != msgExtensionFailure {
		t.Fatalf("bad bind: %d", r)
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	if len(up.binds) != 2 || !bytes.Equal(up.binds[0], b1) || !bytes.Equal(up.binds[1], b2) {
		t.Fatalf("the upstream got %d binds", len(up.binds))
	}
}

// rawCaller sends one message on c and returns the type of the answer.
func rawCaller(t *testing.T, c net.Conn) func(msg []byte) byte {
	return func(msg []byte) byte {
		t.Helper()
		frame := binary.BigEndian.AppendUint32(nil, uint32(len(msg)))
		if _, err := c.Write(append(frame, msg...)); err != nil {
			t.Fatal(err)
		}
		var hdr [4]byte
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			t.Fatal(err)
		}
		resp := make([]byte, binary.BigEndian.Uint32(hdr[:]))
		if _, err := io.ReadFull(c, resp); err != nil {
			t.Fatal(err)
		}
		return resp[0]
	}
}

// ext is a session-bind extension message.
func ext(contents []byte) []byte {
	return append([]byte{msgExtension}, ssh.Marshal(extensionMsg{Name: ExtSessionBind, Contents: contents})...)
}

// A connection linked to the upstream agent before the gateway stopped
// using it sends it no more session-binds: the host keys and session ids
// of the client's logins are no longer the upstream's to see.
func TestUpstreamStoppedGetsNoSessionBinds(t *testing.T) {
	up := startUpstream(t)
	ts := startGated(t, up, UpstreamRefuse)
	call := rawCaller(t, ts.rawConn(t))
	host1, host2 := newHost(t), newHost(t)
	if r := call(ext(host1.bind([]byte("session-one"), true))); r != msgSuccess {
		t.Fatalf("bind: %d", r)
	}
	if r := call([]byte{msgRequestIdentities}); r != msgIdentitiesAnswer {
		t.Fatalf("list: %d", r)
	}
	ts.srv.Upstream.Stop()
	if r := call(ext(host2.bind([]byte("session-two"), false))); r != msgSuccess {
		t.Fatalf("bind after the stop: %d", r)
	}
	if n := up.bindCount(); n != 1 {
		t.Fatalf("the upstream got %d session-binds, %d after the gateway stopped using it", n, n-1)
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

// A key added to postern with constraints (ssh-add -c, -h) that the
// upstream holds without them: a client that removes postern's copy still
// signs with the upstream's only under those constraints, and the
// upstream's copy is not listed where postern's is hidden.
func TestUpstreamCopyUsedUnderAddedConstraints(t *testing.T) {
	newKey := func() (ed25519.PrivateKey, ssh.PublicKey) {
		_, k, _ := ed25519.GenerateKey(rand.Reader)
		pub, _ := ssh.NewPublicKey(k.Public())
		return k, pub
	}
	t.Run("confirm", func(t *testing.T) {
		up := startUpstream(t)
		ts := startGated(t, up, UpstreamRefuse)
		k, pub := newKey()
		if err := up.Add(agent.AddedKey{PrivateKey: k, Comment: "upstream copy"}); err != nil {
			t.Fatal(err)
		}
		ag, _ := ts.client(t)
		if err := ag.Add(agent.AddedKey{PrivateKey: k, Comment: "own, -c", ConfirmBeforeUse: true}); err != nil {
			t.Fatal(err)
		}
		other, _ := ts.client(t)
		if err := other.Remove(pub); err != nil {
			t.Fatalf("ssh-add -d of postern's copy: %v", err)
		}
		if _, err := other.Sign(pub, []byte("x")); err != nil {
			t.Fatalf("the upstream's copy: %v", err)
		}
		if r := ts.dec.last(); !r.Key.Upstream || !r.Key.Confirm {
			t.Fatalf("the upstream's copy was used without the confirmation postern's had: %+v", r.Key)
		}
	})
	t.Run("destinations", func(t *testing.T) {
		up := startUpstream(t)
		ts := startGated(t, up, UpstreamRefuse)
		k, pub := newKey()
		up.Add(agent.AddedKey{PrivateKey: k, Comment: "upstream copy"})
		hostA, hostB := newHost(t), newHost(t)
		id, err := NewIdentity(k, nil, "own, -h a")
		if err != nil {
			t.Fatal(err)
		}
		id.Source = Added
		id.Dest = []DestConstraint{{To: Hop{Hostname: "a", Keys: []HopKey{{Key: hostA.PublicKey()}}}}}
		if err := ts.srv.Keys.Add(id); err != nil {
			t.Fatal(err)
		}
		c := ts.rawConn(t)
		sid := []byte("session to b")
		c.Write(frame(append([]byte{msgExtension}, ssh.Marshal(extensionMsg{Name: ExtSessionBind, Contents: hostB.bind(sid, false)})...)))
		if typ := readReply(t, c); typ != msgSuccess {
			t.Fatalf("session-bind: reply %d", typ)
		}
		if r := roundTrip(t, c, []byte{msgRequestIdentities}); r[0] != msgIdentitiesAnswer || binary.BigEndian.Uint32(r[1:5]) != 0 {
			t.Fatalf("bound to b, a key restricted to a is listed: %x", r[:5])
		}
		sign := frame(append([]byte{msgSignRequest}, ssh.Marshal(signRequestMsg{KeyBlob: pub.Marshal(), Data: userauth(sid, "me", pub, nil)})...))
		c.Write(sign)
		if typ := readReply(t, c); typ != msgFailure {
			t.Fatalf("a login to b with a key restricted to a: reply %d", typ)
		}
		c.Write(frame(append([]byte{msgRemoveIdentity}, ssh.Marshal(keyBlobMsg{KeyBlob: pub.Marshal()})...)))
		if typ := readReply(t, c); typ != msgSuccess {
			t.Fatalf("ssh-add -d of postern's copy: reply %d", typ)
		}
		c.Write(sign)
		if typ := readReply(t, c); typ != msgFailure || up.signCount() != 0 {
			t.Fatalf("once postern's copy was removed, the upstream's signed a login to b (reply %d, %d signatures)", typ, up.signCount())
		}
	})
}

func TestUpstreamChanges(t *testing.T) {
	newKey := func() (ed25519.PrivateKey, ssh.PublicKey) {
		_, k, _ := ed25519.GenerateKey(rand.Reader)
		pub, _ := ssh.NewPublicKey(k.Public())
		return k, pub
	}

	t.Run("refuse", func(t *testing.T) {
		up := startUpstream(t)
		upKey := up.addKey(t, "upstream")
		ts := startGated(t, up, UpstreamRefuse)
		ag, _ := ts.client(t)
		staysWithPostern(t, ag, up, upKey)
		if l, _ := ag.List(); len(l) != 1 {
			t.Fatalf("after remove all: %v", l)
		}
	})
	t.Run("forward", func(t *testing.T) {
		up := startUpstream(t)
		upKey := up.addKey(t, "upstream")
		log := &keyLog{}
		ts := startGated(t, up, UpstreamForward)
		ts.srv.Record = log.record
		ag, _ := ts.client(t)
		k, pub := newKey()
		fp := ssh.FingerprintSHA256(pub)
		if err := ag.Add(agent.AddedKey{PrivateKey: k, Comment: "sent", LifetimeSecs: 600}); err != nil || !upstreamHas(up, pub) {
			t.Fatalf("add did not go upstream: %v", err)
		}
		if ids, _ := ts.srv.Keys.Identities(); len(ids) != 0 {
			t.Fatalf("a forwarded add stayed in postern: %v", ids)
		}
		if evs := log.take(); len(evs) != 1 || evs[0].Type != audit.EventAgentKeyAdded || evs[0].Key != fp ||
			evs[0].Detail["key_holder"] != "upstream" || evs[0].Detail["comment"] != "sent" || evs[0].Approver == "" {
			t.Fatalf("a forwarded add recorded %+v", evs)
		}
		// An add the log cannot record is taken back from the upstream.
		log.failing(errors.New("disk full"))
		k2, pub2 := newKey()
		if err := ag.Add(agent.AddedKey{PrivateKey: k2}); err == nil || upstreamHas(up, pub2) {
			t.Fatalf("an unrecorded add went upstream and stayed: %v", err)
		}
		log.failing(nil)
		if err := ag.Remove(pub); err != nil || upstreamHas(up, pub) {
			t.Fatalf("remove did not go upstream: %v", err)
		}
		if err := ag.RemoveAll(); err != nil || upstreamHas(up, upKey) {
			t.Fatalf("remove all did not go upstream: %v", err)
		}
		evs := log.take()
		if len(evs) != 2 || evs[0].Type != audit.EventAgentKeyRemoved || evs[0].Key != fp || evs[0].Reason != audit.ReasonRemoved ||
			evs[1].Key != "" || evs[1].Detail["key_holder"] != "upstream" {
			t.Fatalf("removals forwarded upstream recorded %+v", evs)
		}
		// From a run's socket, nothing changes the upstream's keys: an
		// add stays with postern, removals of upstream keys are refused.
		other := up.addKey(t, "kept")
		staysWithPostern(t, ts.runClient(t, "R1"), up, other)
		// A malformed add is refused here, not sent.
		c := ts.rawConn(t)
		c.Write([]byte{0, 0, 0, 5, msgAddIdentity, 0, 0, 0, 9})
		var resp [5]byte
		if _, err := io.ReadFull(c, resp[:]); err != nil || resp[4] != msgFailure {
			t.Fatalf("malformed add: %v %v", resp, err)
		}
	})
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

// Whatever an upstream sends back, postern answers with a failure or a
// shorter list, never a panic or a hang.
func TestUpstreamMalformedReplies(t *testing.T) {
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	pub, _ := ssh.NewPublicKey(k.Public())
	idList := append([]byte{msgIdentitiesAnswer}, ssh.Marshal(struct {
		N             uint32
		Blob, Comment []byte
	}{1, pub.Marshal(), []byte("k")})...)
	cases := map[string][][]byte{
		"empty":           {{}},
		"oversized":       {append(binary.BigEndian.AppendUint32(nil, MaxMessage+1), msgSuccess)},
		"count too large": {append([]byte{0, 0, 0, 5, msgIdentitiesAnswer}, 0xff, 0xff, 0xff, 0xff)},
		"truncated list":  {frame(append([]byte{msgIdentitiesAnswer}, 0, 0, 0, 2))},
		"trailing":        {frame(append(append([]byte{}, idList...), 1))},
		"bad key": {frame(append([]byte{msgIdentitiesAnswer}, ssh.Marshal(struct {
			N    uint32
			B, C string
		}{1, "junk", "c"})...))},
		"sign: failure":     {frame(idList), frame([]byte{msgFailure})},
		"sign: garbage sig": {frame(idList), frame(append([]byte{msgSignResponse}, ssh.Marshal(struct{ S string }{"junk"})...))},
		"sign: wrong type":  {frame(idList), frame([]byte{msgIdentitiesAnswer, 0, 0, 0, 0})},
	}
	for name, replies := range cases {
		t.Run(name, func(t *testing.T) {
			sock := scriptedAgent(t, replies)
			ts := startServerWith(t, func(s *Server) { s.Upstream = &UpstreamAgent{Socket: sock} })
			ag, _ := ts.client(t)
			l, err := ag.List()
			if err != nil {
				t.Fatalf("list: %v", err)
			}
			if strings.HasPrefix(name, "sign") {
				if len(l) != 1 {
					t.Fatalf("list = %v", l)
				}
				if _, err := ag.Sign(pub, []byte("x")); err == nil {
					t.Fatal("signed with a malformed upstream reply")
				}
				return
			}
			if len(l) != 0 {
				t.Fatalf("list = %v", l)
			}
		})
	}
}

func frame(b []byte) []byte { return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...) }

// scriptedAgent answers each request on a connection with the next of
// replies (raw bytes, framed by the caller), then closes it.
func scriptedAgent(t testing.TB, replies [][]byte) string {
	dir, err := os.MkdirTemp("", "scripted-")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(); os.RemoveAll(dir) })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				for _, r := range replies {
					var hdr [4]byte
					if _, err := io.ReadFull(c, hdr[:]); err != nil {
						return
					}
					if _, err := io.CopyN(io.Discard, c, int64(binary.BigEndian.Uint32(hdr[:]))); err != nil {
						return
					}
					c.Write(r)
				}
			}()
		}
	}()
	return sock
}

// upstreamHas reports whether the upstream agent holds pub.
func upstreamHas(up *upstreamStub, pub ssh.PublicKey) bool {
	l, _ := up.List()
	for _, k := range l {
		if bytes.Equal(k.Marshal(), pub.Marshal()) {
			return true
		}
	}
	return false
}

// staysWithPostern checks that ag's changes do not reach the upstream:
// an add stays with postern, a removal of upKey (which only the upstream
// holds) is refused, and a removal of all leaves it there.
func staysWithPostern(t *testing.T, ag agent.ExtendedAgent, up *upstreamStub, upKey ssh.PublicKey) {
	t.Helper()
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	pub, _ := ssh.NewPublicKey(k.Public())
	if err := ag.Add(agent.AddedKey{PrivateKey: k}); err != nil || upstreamHas(up, pub) {
		t.Fatalf("add went upstream, or failed: %v", err)
	}
	if err := ag.Remove(upKey); err == nil || !upstreamHas(up, upKey) {
		t.Fatalf("removed an upstream key: %v", err)
	}
	if err := ag.RemoveAll(); err != nil || !upstreamHas(up, upKey) {
		t.Fatalf("remove all: %v; the upstream lost its key", err)
	}
}

// A signature the upstream agent sends back leaves only when it is the
// one asked for: by the key named, over the data sent, with the
// algorithm the flags chose.
func TestUpstreamSignatureChecked(t *testing.T) {
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	pub, _ := ssh.NewPublicKey(k.Public())
	signer, _ := ssh.NewSignerFromKey(k)
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	otherSigner, _ := ssh.NewSignerFromKey(other)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	rsaSigner, _ := ssh.NewSignerFromKey(rsaKey)
	list := func(pub ssh.PublicKey) []byte {
		return frame(append([]byte{msgIdentitiesAnswer}, ssh.Marshal(struct {
			N             uint32
			Blob, Comment []byte
		}{1, pub.Marshal(), []byte("k")})...))
	}
	answer := func(sig *ssh.Signature, err error) []byte {
		if err != nil {
			t.Fatal(err)
		}
		return frame(append([]byte{msgSignResponse}, ssh.Marshal(struct{ S []byte }{ssh.Marshal(sig)})...))
	}
	sha1RSA := func() (*ssh.Signature, error) {
		return rsaSigner.(ssh.AlgorithmSigner).SignWithAlgorithm(rand.Reader, []byte("x"), ssh.KeyAlgoRSA)
	}
	cases := []struct {
		name    string
		key     ssh.PublicKey
		flags   agent.SignatureFlags
		replies [][]byte
	}{
		{"another key", pub, 0, [][]byte{list(pub), answer(otherSigner.Sign(rand.Reader, []byte("x")))}},
		{"other data", pub, 0, [][]byte{list(pub), answer(signer.Sign(rand.Reader, []byte("y")))}},
		{"sha-1 for sha-256", rsaSigner.PublicKey(), agent.SignatureFlagRsaSha256, [][]byte{list(rsaSigner.PublicKey()), answer(sha1RSA())}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sock := scriptedAgent(t, tc.replies)
			ts := startServerWith(t, func(s *Server) { s.Upstream = &UpstreamAgent{Socket: sock} })
			ag, _ := ts.client(t)
			if _, err := ag.List(); err != nil {
				t.Fatalf("list: %v", err)
			}
			if sig, err := ag.SignWithFlags(tc.key, []byte("x"), tc.flags); err == nil {
				t.Fatalf("handed on a signature the upstream made for something else (%s)", sig.Format)
			}
			if r := ts.dec.lastRefusal(); r != audit.ReasonSigningFailed {
				t.Fatalf("refusal %q", r)
			}
		})
	}
	// The one asked for leaves.
	sock := scriptedAgent(t, [][]byte{list(pub), answer(signer.Sign(rand.Reader, []byte("x")))})
	ts := startServerWith(t, func(s *Server) { s.Upstream = &UpstreamAgent{Socket: sock} })
	ag, _ := ts.client(t)
	ag.List()
	if _, err := ag.Sign(pub, []byte("x")); err != nil {
		t.Fatalf("sign: %v", err)
	}
}

// A stopped upstream agent lists nothing and gets no sign request.
func TestUpstreamStopped(t *testing.T) {
	up := startUpstream(t)
	k := up.addKey(t, "up")
	ts := startGated(t, up, UpstreamForward)
	ag, _ := ts.client(t)
	if _, err := ag.Sign(k, []byte("x")); err != nil {
		t.Fatalf("sign before the stop: %v", err)
	}
	ts.srv.Upstream.Stop()
	if l, err := ag.List(); err != nil || len(l) != 0 {
		t.Fatalf("list after the stop: %v, %v", l, err)
	}
	if _, err := ag.Sign(k, []byte("x")); err == nil || up.signCount() != 1 {
		t.Fatalf("sign after the stop: %v; the upstream got %d requests", err, up.signCount())
	}
	if err := ag.Remove(k); err == nil || !upstreamHas(up, k) {
		t.Fatalf("removed the upstream's key after the stop: %v", err)
	}
}

// An upstream agent that answers the listing, then reads nothing more,
// fails a large sign request once the wait is over, instead of keeping
// its client waiting for ever.
func TestUpstreamThatStopsReading(t *testing.T) {
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	pub, _ := ssh.NewPublicKey(k.Public())
	idList := frame(append([]byte{msgIdentitiesAnswer}, ssh.Marshal(struct {
		N             uint32
		Blob, Comment []byte
	}{1, pub.Marshal(), []byte("k")})...))
	dir := t.TempDir()
	sock := filepath.Join(dir, "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	stopped := make(chan struct{})
	t.Cleanup(func() { close(stopped); l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var hdr [5]byte
				if _, err := io.ReadFull(c, hdr[:]); err != nil {
					return
				}
				c.Write(idList)
				<-stopped
			}()
		}
	}()
	ts := startServerWith(t, func(s *Server) {
		s.Upstream = &UpstreamAgent{Socket: sock}
		s.TouchTimeout = func() time.Duration { return 100 * time.Millisecond }
	})
	ag, _ := ts.client(t)
	if l, err := ag.List(); err != nil || len(l) != 1 {
		t.Fatalf("list: %v, %v", l, err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := ag.Sign(pub, make([]byte, MaxMessage-1024))
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("signed")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the sign request still waits for an upstream agent that reads nothing")
	}
}

// An upstream agent whose identities fill a whole reply does not push
// the listing past what ssh-add and ssh read (256 KiB): postern's own
// keys stay listed, and the upstream's that do not fit are left out.
func TestUpstreamListingFits(t *testing.T) {
	if _, err := exec.LookPath("ssh-add"); err != nil {
		t.Fatal("ssh-add is not installed (Debian package openssh-client; .ci/run installs it)")
	}
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	pub, _ := ssh.NewPublicKey(k.Public())
	long := strings.Repeat("c", MaxMessage-len(pub.Marshal())-64)
	idList := frame(append([]byte{msgIdentitiesAnswer}, ssh.Marshal(struct {
		N             uint32
		Blob, Comment []byte
	}{1, pub.Marshal(), []byte(long)})...))
	sock := scriptedAgent(t, [][]byte{idList})
	ts := startServerWith(t, func(s *Server) { s.Upstream = &UpstreamAgent{Socket: sock} })
	ag, _ := ts.client(t)
	_, own, _ := ed25519.GenerateKey(rand.Reader)
	if err := ag.Add(agent.AddedKey{PrivateKey: own, Comment: "own"}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ssh-add", "-l")
	cmd.Env = append(os.Environ(), "SSH_AUTH_SOCK="+ts.sock)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), " own (ED25519)") {
		t.Fatalf("ssh-add -l: %v\n%s", err, out)
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

// An add that names a provider library (a security key's) from a
// connection that came through ssh is refused, not forwarded: the
// upstream agent would load the library, which postern never does for
// such a connection (CVE-2023-38408), whether or not the upstream took
// the session-bind that tells it so.
func TestUpstreamForwardedAddOfProviderFromRemote(t *testing.T) {
	sock := scriptedAgent(t, [][]byte{frame([]byte{msgSuccess}), frame([]byte{msgSuccess})})
	ts := startServerWith(t, func(s *Server) { s.Upstream = &UpstreamAgent{Socket: sock, Changes: UpstreamForward} })
	c := ts.rawConn(t)
	if r := roundTrip(t, c, extMsg(ExtSessionBind, newHost(t).bind([]byte("sid-remote"), true))); r[0] != msgSuccess {
		t.Fatalf("session-bind: reply %d", r[0])
	}
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	if r := roundTrip(t, c, skEd25519Add(pub, "ssh:", skUserPresenceRequired, "/tmp/evil.so")); r[0] != msgFailure {
		t.Fatalf("a provider added from a forwarded connection was sent to the upstream agent: reply %d", r[0])
	}
}
