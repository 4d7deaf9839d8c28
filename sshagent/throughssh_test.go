package sshagent

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/internal/procid"
)

// why@postern answers a client on this machine, and refuses one that came
// through ssh (a forwarded agent connection is bound so): the host it is
// forwarded to is not told what was decided for the person's programs.
func TestWhyRefusedThroughSSH(t *testing.T) {
	ts := startServerWith(t, func(s *Server) {
		s.Why = func(*procid.Peer, approvals.Channel) ([]byte, error) { return []byte(`{"last":"secret"}`), nil }
	})
	local := ts.rawConn(t)
	if _, err := AskExtension(local, ExtWhy, time.Now().Add(10*time.Second)); err != nil {
		t.Fatalf("a local client's why: %v", err)
	}
	host := newHost(t)
	for _, fwd := range []bool{true, false} {
		c := ts.rawConn(t)
		writeFrame(c, append([]byte{msgExtension}, ssh.Marshal(extensionMsg{Name: ExtSessionBind, Contents: host.bind([]byte("sid"), fwd)})...))
		if reply := readReply(t, c); reply != msgSuccess {
			t.Fatalf("session-bind: reply %d", reply)
		}
		if _, err := AskExtension(c, ExtWhy, time.Now().Add(10*time.Second)); !errors.Is(err, ErrExtensionRefused) {
			t.Fatalf("why after a session-bind (forwarding %v): %v, want it refused", fwd, err)
		}
	}
}

// A connection that came through ssh neither locks nor unlocks the
// agent: ssh-add -X takes the vault's passphrase, which a host the agent
// is forwarded to would guess, and a lock would shut the person out.
func TestNoLockOrUnlockThroughSSH(t *testing.T) {
	ts := startServer(t)
	host := newHost(t)
	bound := func() agent.ExtendedAgent {
		ag, _ := ts.client(t)
		if _, err := ag.Extension(ExtSessionBind, host.bind([]byte("sid"), true)); err != nil {
			t.Fatal(err)
		}
		return ag
	}
	if err := bound().Lock([]byte("pass")); err == nil || ts.srv.Keys.Locked() {
		t.Fatalf("a connection through ssh locked the agent: %v", err)
	}
	own, _ := ts.client(t)
	if err := own.Lock([]byte("pass")); err != nil {
		t.Fatal(err)
	}
	if err := bound().Unlock([]byte("pass")); err == nil || !ts.srv.Keys.Locked() {
		t.Fatalf("a connection through ssh unlocked the agent: %v", err)
	}
}

// On a forwarded connection, a login for another session than the bound
// one comes from a hop beyond that did not bind: it is decided as a login
// to a destination not verified, forwarded, as ssh-agent signs it; a key
// restricted to destinations never signs it, and a connection bound for
// authentication has no hop beyond.
func TestHopWithoutSessionBindIsUnverified(t *testing.T) {
	ts := startServer(t)
	ts.dec.allow.Store(true)
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	pub, _ := ssh.NewPublicKey(k.Public())
	first, next := newHost(t), newHost(t)
	if r := roundTrip(t, ts.rawConn(t), ed25519Add(k, "plain", nil)); r[0] != msgSuccess {
		t.Fatal("add failed")
	}
	sign := func(fwd bool) byte {
		c := ts.rawConn(t)
		if r := roundTrip(t, c, extMsg(ExtSessionBind, first.bind([]byte("sid-1"), fwd))); r[0] != msgSuccess {
			t.Fatal("bind failed")
		}
		return roundTrip(t, c, append([]byte{msgSignRequest}, ssh.Marshal(signRequestMsg{KeyBlob: pub.Marshal(), Data: userauth([]byte("sid-2"), "u", pub, next.PublicKey())})...))[0]
	}
	if r := sign(true); r != msgSignResponse {
		t.Fatalf("a hop without session-bind on a forwarded connection: reply %d", r)
	}
	if r := ts.dec.last(); r.Purpose != approvals.PurposeAuth || r.Dest != nil || !r.Forwarded {
		t.Fatalf("decided as purpose %s, destination %+v, forwarded %v; want a login to an unverified destination, forwarded", r.Purpose, r.Dest, r.Forwarded)
	}
	if r := sign(false); r != msgFailure {
		t.Fatalf("another session on a connection bound for authentication: reply %d", r)
	}
	cons := restrictTo([2][]byte{destHop("", ""), destHop("", "first", first.PublicKey())},
		[2][]byte{destHop("", "first", first.PublicKey()), destHop("", "next", next.PublicKey())})
	if r := roundTrip(t, ts.rawConn(t), ed25519Add(k, "restricted", cons)); r[0] != msgSuccess {
		t.Fatal("add failed")
	}
	if r := sign(true); r != msgFailure {
		t.Fatalf("a key restricted to destinations on a hop without session-bind: reply %d", r)
	}
}
