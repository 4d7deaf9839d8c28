package sshagent

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/postern/postern/audit"
)

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
