package sshagent

import (
	"crypto/ed25519"
	"crypto/rand"
	"net"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// destHop is one hop of a restrict-destination-v00@openssh.com
// constraint: a user pattern, a host name and its keys.
func destHop(user, host string, keys ...ssh.PublicKey) []byte {
	b := ssh.Marshal(struct{ U, H, R string }{user, host, ""})
	for _, k := range keys {
		b = append(b, ssh.Marshal(struct {
			K  []byte
			CA bool
		}{k.Marshal(), false})...)
	}
	return b
}

// restrictTo is the wire form of a destination constraint made of the
// given from/to pairs, to append to an add message.
func restrictTo(pairs ...[2][]byte) []byte {
	var cs []byte
	for _, p := range pairs {
		cs = append(cs, ssh.Marshal(struct{ C []byte }{ssh.Marshal(struct{ F, T, R []byte }{p[0], p[1], nil})})...)
	}
	return append([]byte{constrainExtension}, ssh.Marshal(struct {
		N string
		D []byte
	}{ExtRestrictDestination, cs})...)
}

// skPublic is the public key of a FIDO security key whose public half is pub.
func skPublic(t *testing.T, pub ed25519.PublicKey) ssh.PublicKey {
	k, err := ssh.ParsePublicKey(ssh.Marshal(struct {
		T string
		P []byte
		A string
	}{keyAlgoSKED25519, pub, "ssh:"}))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// startServerWithProvider starts a server that takes security keys from
// a provider in a directory of the test's, and returns the provider's
// path.
func startServerWithProvider(t *testing.T) (*testServer, string) {
	dir := t.TempDir()
	lib := filepath.Join(dir, "libsk.so")
	if err := os.WriteFile(lib, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return startServerWith(t, func(s *Server) { s.Providers = dir + "/*" }), lib
}

// A security key's adder need not hold anything but its public half and
// a handle. The person's destination restriction (ssh-add -h) is kept for
// the key after ssh-add -D, and a run that adds the key again, restricted
// to another host, does not get it used there. The person may change it
// (ssh-add -D, then ssh-add -h, as OpenSSH's agent-pkcs11-restrict does).
func TestSecurityKeyAddedAgainKeepsItsRestriction(t *testing.T) {
	ts, lib := startServerWithProvider(t)
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	key := skPublic(t, pub)
	a, b := newHost(t), newHost(t)
	toHost := func(h hostSigner) []byte {
		return restrictTo([2][]byte{destHop("", ""), destHop("", "h", h.PublicKey())})
	}
	person := ts.rawConn(t)
	if r := roundTrip(t, person, append(skEd25519Add(pub, "ssh:", 0, lib), toHost(a)...)); r[0] != msgSuccess {
		t.Fatalf("the person's add: reply %d", r[0])
	}
	if r := roundTrip(t, person, []byte{msgRemoveAllIdentities}); r[0] != msgSuccess {
		t.Fatalf("ssh-add -D: reply %d", r[0])
	}
	rc, err := net.Dial("unix", ts.serveRun(t, "R1"))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if r := roundTrip(t, rc, append(skEd25519Add(pub, "ssh:", 0, lib), toHost(b)...)); r[0] != msgSuccess {
		t.Fatalf("the run's add: reply %d", r[0])
	}
	decidedFor := func(h hostSigner, sid string) bool {
		c := ts.rawConn(t)
		roundTrip(t, c, extMsg(ExtSessionBind, h.bind([]byte(sid), false)))
		before := ts.dec.count()
		roundTrip(t, c, append([]byte{msgSignRequest}, ssh.Marshal(signRequestMsg{KeyBlob: key.Marshal(), Data: userauth([]byte(sid), "u", key, h.PublicKey())})...))
		return ts.dec.count() != before
	}
	if decidedFor(b, "sid-B") {
		t.Fatal("a sign request for a host the person's restriction forbids passed it, after a run's add of the same security key")
	}
	if !decidedFor(a, "sid-A") {
		t.Fatal("the person's restriction no longer lets the key sign for its own host")
	}
	if r := roundTrip(t, person, []byte{msgRemoveAllIdentities}); r[0] != msgSuccess {
		t.Fatalf("ssh-add -D: reply %d", r[0])
	}
	if r := roundTrip(t, person, append(skEd25519Add(pub, "ssh:", 0, lib), toHost(b)...)); r[0] != msgSuccess {
		t.Fatalf("the person's add for B: reply %d", r[0])
	}
	if !decidedFor(b, "sid-B2") {
		t.Fatal("the person's own restriction to B, after ssh-add -D, does not let the key sign for B")
	}
}

// A run's socket removes only the keys added through it. A run that adds
// again a key the person added (a security key takes only its public
// half) is refused: it neither replaces the person's copy (dropping its
// touch) nor makes it the run's, to remove.
func TestRunCannotReplaceThePersonsKey(t *testing.T) {
	ts, lib := startServerWithProvider(t)
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	key := skPublic(t, pub)
	if r := roundTrip(t, ts.rawConn(t), skEd25519Add(pub, "ssh:", skUserPresenceRequired, lib)); r[0] != msgSuccess {
		t.Fatalf("the person's add: reply %d", r[0])
	}
	runSock := ts.serveRun(t, "R1")
	rc, err := net.Dial("unix", runSock)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if r := roundTrip(t, rc, skEd25519Add(pub, "ssh:", 0, lib)); r[0] != msgFailure {
		t.Errorf("a run's add of the person's key: reply %d, want a failure", r[0])
	}
	if err := agent.NewClient(rc).Remove(key); err == nil {
		t.Error("a run removed the person's key")
	}
	ids, _ := ts.srv.Keys.Identities()
	if len(ids) != 1 || ids[0].Run != "" || !ids[0].Touch() {
		t.Fatalf("the person's key after the run's add: %+v", ids)
	}
}

// A destination-restricted key never signs on a hop bound for forwarding,
// whatever the user name the request gives (OpenSSH: "tried to sign on
// forwarding hop"); an empty one is a user name, not a listing.
func TestRestrictedKeyNeverSignsOnAForwardingHop(t *testing.T) {
	ts := startServer(t)
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	pub, _ := ssh.NewPublicKey(k.Public())
	h1, h2 := newHost(t), newHost(t)
	cons := restrictTo([2][]byte{destHop("", ""), destHop("", "host1", h1.PublicKey())},
		[2][]byte{destHop("", "host1", h1.PublicKey()), destHop("", "host2", h2.PublicKey())})
	if r := roundTrip(t, ts.rawConn(t), ed25519Add(k, "h", cons)); r[0] != msgSuccess {
		t.Fatal("add failed")
	}
	c := ts.rawConn(t)
	if r := roundTrip(t, c, extMsg(ExtSessionBind, h1.bind([]byte("sid-1"), true))); r[0] != msgSuccess {
		t.Fatal("bind failed")
	}
	for _, user := range []string{"u", ""} {
		if r := roundTrip(t, c, append([]byte{msgSignRequest}, ssh.Marshal(signRequestMsg{KeyBlob: pub.Marshal(), Data: userauth([]byte("sid-1"), user, pub, h1.PublicKey())})...)); r[0] != msgFailure {
			t.Errorf("a destination-restricted key signed on a forwarding hop for user %q: reply %d", user, r[0])
		}
	}
}

// A security key that requires user verification (a PIN) is refused when
// added, as ssh-add refuses it: the agent cannot ask for the PIN, and
// every signature with it failed at the device, after its card.
func TestVerifyRequiredSecurityKeyIsRefused(t *testing.T) {
	ts, lib := startServerWithProvider(t)
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	c := ts.rawConn(t)
	if r := roundTrip(t, c, skEd25519Add(pub, "ssh:", skUserPresenceRequired|skUserVerificationRequired, lib)); r[0] != msgFailure {
		t.Fatalf("a verify-required security key was added: reply %d", r[0])
	}
	if r := roundTrip(t, c, skEd25519Add(pub, "ssh:", skUserPresenceRequired, lib)); r[0] != msgSuccess {
		t.Fatalf("the same key without verification: reply %d", r[0])
	}
}
