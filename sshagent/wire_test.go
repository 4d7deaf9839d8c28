package sshagent

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// roundTrip writes one message on a raw connection and returns the reply
// (type and payload).
func roundTrip(t testing.TB, c net.Conn, msg []byte) []byte {
	t.Helper()
	writeFrame(c, msg)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var hdr [4]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		t.Fatalf("message %x: %v", msg[:1], err)
	}
	body := make([]byte, binary.BigEndian.Uint32(hdr[:]))
	if _, err := io.ReadFull(c, body); err != nil {
		t.Fatal(err)
	}
	return body
}

func extMsg(name string, contents []byte) []byte {
	return append([]byte{msgExtension}, ssh.Marshal(struct {
		N string
		R []byte `ssh:"rest"`
	}{name, contents})...)
}

// ed25519Add is an ADD_ID_CONSTRAINED message for k with the given
// constraint bytes, as ssh-add writes it.
func ed25519Add(k ed25519.PrivateKey, comment string, constraints []byte) []byte {
	m := []byte{msgAddIDConstrained}
	m = append(m, ssh.Marshal(struct {
		T         string
		Pub, Priv []byte
		C         string
	}{ssh.KeyAlgoED25519, k.Public().(ed25519.PublicKey), k, comment})...)
	return append(m, constraints...)
}

// skEd25519Add is the ADD_ID_CONSTRAINED message ssh-add sends for a
// FIDO Ed25519 key with its provider.
func skEd25519Add(pub ed25519.PublicKey, app string, flags byte, provider string) []byte {
	m := []byte{msgAddIDConstrained}
	m = append(m, ssh.Marshal(struct {
		T        string
		Pub      []byte
		App      string
		Flags    uint8
		Handle   []byte
		Reserved []byte
		Comment  string
	}{T: keyAlgoSKED25519, Pub: pub, App: app, Flags: flags, Handle: []byte("handle"), Comment: "sk"})...)
	m = append(m, constrainExtension)
	return append(m, ssh.Marshal(struct{ N, P string }{ExtSKProvider, provider})...)
}

func addMessages(t testing.TB) [][]byte {
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	lifetime := []byte{constrainLifetime, 0, 0, 0, 60, constrainConfirm}
	return [][]byte{
		ed25519Add(k, "plain", nil),
		ed25519Add(k, "constrained", lifetime),
		skEd25519Add(pub, "ssh:", 1, "/nonexistent/sk.so"),
	}
}

func TestExtensionReplies(t *testing.T) {
	ts := startServer(t)
	c := ts.rawConn(t)
	// A failed session-bind is an extension failure, told apart from an
	// unknown extension.
	bad := ssh.Marshal(sessionBindMsg{HostKey: newHost(t).PublicKey().Marshal(), SessionID: []byte("sid"), Signature: ssh.Marshal(&ssh.Signature{Format: "ssh-ed25519", Blob: make([]byte, 64)})})
	if r := roundTrip(t, c, extMsg(ExtSessionBind, bad)); r[0] != msgExtensionFailure {
		t.Fatalf("failed session-bind: reply %d, want %d", r[0], msgExtensionFailure)
	}
	if r := roundTrip(t, c, extMsg("unknown@example.com", nil)); r[0] != msgFailure {
		t.Fatalf("unknown extension: reply %d", r[0])
	}
	// The query reply is the response alone, with no SUCCESS after it.
	c2 := ts.rawConn(t)
	if r := roundTrip(t, c2, extMsg(ExtQuery, nil)); r[0] != msgExtensionResponse {
		t.Fatalf("query: reply %d", r[0])
	}
	if r := roundTrip(t, c2, []byte{msgRequestIdentities}); r[0] != msgIdentitiesAnswer {
		t.Fatalf("after query: reply %d (a stray reply was queued)", r[0])
	}
}

func TestLockedAgentAcceptsSessionBind(t *testing.T) {
	ts := startServer(t)
	ag, _ := ts.client(t)
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	ag.Add(agent.AddedKey{PrivateKey: k})
	if err := ag.Lock([]byte("pw")); err != nil {
		t.Fatal(err)
	}
	c := ts.rawConn(t)
	host := newHost(t)
	if r := roundTrip(t, c, extMsg(ExtSessionBind, host.bind([]byte("sid-locked"), false))); r[0] != msgSuccess {
		t.Fatalf("session-bind while locked: reply %d", r[0])
	}
	if r := roundTrip(t, c, extMsg(ExtQuery, nil)); r[0] != msgFailure {
		t.Fatalf("query while locked: reply %d", r[0])
	}
	if r := roundTrip(t, c, []byte{msgRequestIdentities}); r[0] != msgIdentitiesAnswer || binary.BigEndian.Uint32(r[1:]) != 0 {
		t.Fatalf("list while locked: %x", r)
	}
	_, k2, _ := ed25519.GenerateKey(rand.Reader)
	if r := roundTrip(t, c, ed25519Add(k2, "x", nil)); r[0] != msgFailure {
		t.Fatalf("add while locked: reply %d", r[0])
	}
	if err := ag.Unlock([]byte("pw")); err != nil {
		t.Fatal(err)
	}
}

func TestDSAKeys(t *testing.T) {
	ts := startServer(t)
	ag, _ := ts.client(t)
	k := newDSAKey(t)
	add := append([]byte{msgAddIdentity}, ssh.Marshal(struct {
		T             string
		P, Q, G, Y, X *big.Int
		C             string
	}{"ssh-dss", k.P, k.Q, k.G, k.Y, k.X, "dsa"})...)
	if r := roundTrip(t, ts.rawConn(t), add); r[0] != msgSuccess {
		t.Fatal("DSA key refused")
	}
	pub := dsaSigner{k}.PublicKey()
	if l, _ := ag.List(); len(l) != 1 || l[0].Format != "ssh-dss" {
		t.Fatalf("listed %v", l)
	}
	// The RSA flags are ignored for other keys, as ssh-agent ignores them.
	sig, err := ag.SignWithFlags(pub, []byte("data"), agent.SignatureFlagRsaSha256)
	if err != nil {
		t.Fatal(err)
	}
	if err := pub.Verify([]byte("data"), sig); err != nil {
		t.Fatal(err)
	}
}

func TestUserPatternCap(t *testing.T) {
	ts := startServer(t)
	c := ts.rawConn(t)
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	host := newHost(t)
	dest := func(user string) []byte {
		c := ssh.Marshal(struct{ F, T, R []byte }{destHop("", ""), destHop(user, "h", host.PublicKey()), nil})
		return append([]byte{constrainExtension}, ssh.Marshal(struct {
			N string
			D []byte
		}{ExtRestrictDestination, ssh.Marshal(struct{ C []byte }{c})})...)
	}
	if r := roundTrip(t, c, ed25519Add(k, "long", dest(strings.Repeat("u", maxUserPatternBytes+1)))); r[0] != msgFailure {
		t.Fatal("a user pattern over the cap was accepted")
	}
	if r := roundTrip(t, c, ed25519Add(k, "ok", dest(strings.Repeat("u", maxUserPatternBytes)))); r[0] != msgSuccess {
		t.Fatal("a user pattern at the cap was refused")
	}
}

// TestSecurityKeyProviders: a FIDO key is added only with a provider from
// the allow-list, and never over a connection that came through ssh.
func TestSecurityKeyProviders(t *testing.T) {
	ts := startServer(t)
	dir := t.TempDir()
	lib := filepath.Join(dir, "libsk.so")
	os.WriteFile(lib, nil, 0o644)
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	c := ts.rawConn(t)
	if r := roundTrip(t, c, skEd25519Add(pub, "ssh:", skUserPresenceRequired, lib)); r[0] != msgFailure {
		t.Fatal("a provider outside the default allow-list was accepted")
	}
	ts.srv.Providers = dir + "/*"
	if r := roundTrip(t, c, skEd25519Add(pub, "ssh:", skUserPresenceRequired, "internal")); r[0] != msgFailure {
		t.Fatal("the internal provider was accepted")
	}
	c2 := ts.rawConn(t)
	roundTrip(t, c2, extMsg(ExtSessionBind, newHost(t).bind([]byte("sid-remote"), true)))
	if r := roundTrip(t, c2, skEd25519Add(pub, "ssh:", skUserPresenceRequired, lib)); r[0] != msgFailure {
		t.Fatal("a provider was accepted from a forwarded connection")
	}
	if r := roundTrip(t, c, skEd25519Add(pub, "ssh:", skUserPresenceRequired, lib)); r[0] != msgSuccess {
		t.Fatal("an allowed provider was refused")
	}
	ids, _ := ts.srv.Keys.Identities()
	if len(ids) != 1 || ids[0].Key.Type() != keyAlgoSKED25519 || !ids[0].Touch() || ids[0].Provider != lib {
		t.Fatalf("security key identity: %+v", ids)
	}
	// A web-origin key does not sign arbitrary data.
	webPub, _, _ := ed25519.GenerateKey(rand.Reader)
	roundTrip(t, c, skEd25519Add(webPub, "https://example.com", 0, lib))
	ag, _ := ts.client(t)
	wk, _ := ssh.ParsePublicKey(ssh.Marshal(struct {
		T string
		P []byte
		A string
	}{keyAlgoSKED25519, webPub, "https://example.com"}))
	if _, err := ag.Sign(wk, []byte("a web challenge")); err == nil {
		t.Fatal("a web-origin security key signed a non-SSH message")
	}
}

func TestProviderAllowList(t *testing.T) {
	dir := t.TempDir()
	lib := filepath.Join(dir, "p.so")
	os.WriteFile(lib, nil, 0o644)
	link := filepath.Join(t.TempDir(), "link.so")
	os.Symlink(lib, link)
	if real, err := providerAllowed(link, dir+"/*"); err != nil || real != lib {
		t.Fatalf("a symlink into the allowed directory: %q %v", real, err)
	}
	if _, err := providerAllowed(lib, dir+"/*,!"+lib); err == nil {
		t.Fatal("a negated pattern did not refuse")
	}
	if _, err := providerAllowed(lib, ""); err == nil {
		t.Fatal("the default list allowed a temporary directory")
	}
}

// A session-bind whose signature carries bytes past its blob is refused,
// as OpenSSH's agent refuses it: its host key's check reads only the
// blob, and each of a connection's sixteen bindings would keep a request
// of up to 256 KiB for as long as the connection stays.
func TestSessionBindSignatureTrailingData(t *testing.T) {
	ts := startServer(t)
	c := ts.rawConn(t)
	host := newHost(t)
	sid := []byte("session id")
	sig, err := host.Sign(rand.Reader, sid)
	if err != nil {
		t.Fatal(err)
	}
	sig.Rest = make([]byte, 200<<10)
	padded := ssh.Marshal(sessionBindMsg{HostKey: host.PublicKey().Marshal(), SessionID: sid, Signature: ssh.Marshal(sig), Forwarding: true})
	if r := roundTrip(t, c, extMsg(ExtSessionBind, padded)); r[0] != msgExtensionFailure {
		t.Fatalf("a session-bind with 200 KiB after its signature: reply %d, want %d", r[0], msgExtensionFailure)
	}
	if r := roundTrip(t, ts.rawConn(t), extMsg(ExtSessionBind, host.bind(sid, true))); r[0] != msgSuccess {
		t.Fatalf("the same session-bind without them: reply %d", r[0])
	}
}
