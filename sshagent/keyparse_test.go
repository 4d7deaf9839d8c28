package sshagent

import (
	"bytes"
	"context"
	"crypto/dsa"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/internal/procid"
)

// The blob's algorithm name picks the parser: an Ed25519 key parses with
// x/crypto, a DSA key and a DSA certificate (which x/crypto no longer
// parses) here, and a blob cut short or with DSA parameters out of bounds
// is refused.
func TestParsePublicKeyByName(t *testing.T) {
	ed := newEd25519Key(t)
	k := newDSAKey(t)
	p := k.Parameters
	dsaBlob := (&dsaPublicKey{Parameters: p, Y: k.Y}).Marshal()
	certBlob := dsaCertBlob(k)
	smallQ := ssh.Marshal(struct {
		Name       string
		P, Q, G, Y *big.Int
	}{ssh.InsecureKeyAlgoDSA, p.P, big.NewInt(7), p.G, k.Y})

	if key, err := parsePublicKey(ed.Marshal()); err != nil || key.Type() != ssh.KeyAlgoED25519 {
		t.Fatalf("Ed25519: %v %v", key, err)
	}
	if key, err := parsePublicKey(dsaBlob); err != nil || key.Type() != ssh.InsecureKeyAlgoDSA {
		t.Fatalf("DSA: %v %v", key, err)
	}
	key, err := parsePublicKey(certBlob)
	if c, ok := key.(*dsaCertKey); err != nil || !ok || string(c.Marshal()) != string(certBlob) || c.key.Y.Cmp(k.Y) != 0 {
		t.Fatalf("DSA certificate: %#v %v", key, err)
	}
	for name, bad := range map[string][]byte{
		"empty":           nil,
		"name cut short":  ed.Marshal()[:6],
		"Ed25519 cut":     ed.Marshal()[:20],
		"DSA cut":         dsaBlob[:len(dsaBlob)-3],
		"DSA with a 7 q":  smallQ,
		"certificate cut": certBlob[:30],
	} {
		if key, err := parsePublicKey(bad); err == nil {
			t.Errorf("%s: parsed as %v", name, key)
		}
	}
}

// newDSAKey makes an ssh-dss key (1024-bit p, 160-bit q).
func newDSAKey(t testing.TB) *dsa.PrivateKey {
	t.Helper()
	var p dsa.Parameters
	if err := dsa.GenerateParameters(&p, rand.Reader, dsa.L1024N160); err != nil {
		t.Fatal(err)
	}
	k := &dsa.PrivateKey{PublicKey: dsa.PublicKey{Parameters: p}}
	if err := dsa.GenerateKey(k, rand.Reader); err != nil {
		t.Fatal(err)
	}
	return k
}

// dsaCertBlob is the wire form of a certificate of k as far as the agent
// reads one: its type, nonce and key, the rest left unread.
func dsaCertBlob(k *dsa.PrivateKey) []byte {
	return ssh.Marshal(struct {
		Name       string
		Nonce      []byte
		P, Q, G, Y *big.Int
		Rest       []byte `ssh:"rest"`
	}{certAlgoDSA, []byte("nonce"), k.P, k.Q, k.G, k.Y, []byte("the rest of the certificate")})
}

// BenchmarkParsePublicKey parses the Ed25519 key blob a sign request
// names, as every signature's request is parsed.
func BenchmarkParsePublicKey(b *testing.B) {
	blob := newEd25519Key(b).Marshal()
	for b.Loop() {
		if _, err := parsePublicKey(blob); err != nil {
			b.Fatal(err)
		}
	}
}

// newEd25519Key returns a new Ed25519 public key.
func newEd25519Key(t testing.TB) ssh.PublicKey {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// A DSA key's private value must lie between 0 and q: a negative one
// whose base shares a factor with p (no inverse to raise it to) is
// refused, not a panic, and so is one far larger than q, which would
// cost a modular exponentiation of its size.
func TestAddedDSAPrivateOutOfRange(t *testing.T) {
	p := new(big.Int).Lsh(big.NewInt(3), 1022) // 1024 bits, a multiple of 3
	q := new(big.Int).Lsh(big.NewInt(1), 159)
	q.Add(q, big.NewInt(1))
	for name, x := range map[string]*big.Int{
		"negative":  big.NewInt(-1),
		"zero":      big.NewInt(0),
		"q":         q,
		"far above": new(big.Int).Lsh(big.NewInt(1), 4096),
	} {
		g := big.NewInt(3) // shares p's factor 3
		y := big.NewInt(1)
		if x.Sign() > 0 {
			y.Exp(g, x, p)
		}
		b := ssh.Marshal(struct {
			T             string
			P, Q, G, Y, X *big.Int
		}{ssh.InsecureKeyAlgoDSA, p, q, g, y, x})
		if k, _, err := parseAddedKey(b); err == nil {
			t.Errorf("%s x: added as %v", name, k.priv)
		}
	}
}

// An add leaves no private value of its key in the request's buffer,
// added or refused: an RSA, ECDSA or DSA key's private numbers are
// cleared as they are read, as an Ed25519 key's are.
func TestAddClearsPrivateNumbers(t *testing.T) {
	ts := startServer(t)
	rsaKey := func(bits int) *rsa.PrivateKey {
		k, err := rsa.GenerateKey(rand.Reader, bits)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	rsaAdd := func(k *rsa.PrivateKey) ([]byte, [][]byte) {
		return ssh.Marshal(struct {
			T                   string
			N, E, D, Iqmp, P, Q *big.Int
			C                   string
		}{ssh.KeyAlgoRSA, k.N, big.NewInt(int64(k.E)), k.D, k.Precomputed.Qinv, k.Primes[0], k.Primes[1], "rsa"}), [][]byte{k.D.Bytes(), k.Primes[0].Bytes(), k.Primes[1].Bytes(), k.Precomputed.Qinv.Bytes()}
	}
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecAdd := ssh.Marshal(struct {
		T, Curve string
		Q        []byte
		D        *big.Int
		C        string
	}{ssh.KeyAlgoECDSA256, "nistp256", elliptic.Marshal(ec.Curve, ec.X, ec.Y), ec.D, "ecdsa"})
	dk := newDSAKey(t)
	p := dk.Parameters
	dsaAdd := ssh.Marshal(struct {
		T             string
		P, Q, G, Y, X *big.Int
		C             string
	}{ssh.InsecureKeyAlgoDSA, p.P, p.Q, p.G, dk.Y, dk.X, "dsa"})
	self, err := procid.Host.Pin(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	good, goodSecrets := rsaAdd(rsaKey(2048))
	weak, weakSecrets := rsaAdd(rsaKey(1024)) // refused, as OpenSSH 10 does
	for _, tc := range []struct {
		name    string
		add     []byte
		secrets [][]byte
		added   bool
	}{
		{"RSA", good, goodSecrets, true},
		{"RSA of 1024 bits", weak, weakSecrets, false},
		{"ECDSA", ecAdd, [][]byte{ec.D.Bytes()}, true},
		{"DSA", dsaAdd, [][]byte{dk.X.Bytes()}, true},
	} {
		msg := append([]byte{0, 0, 0, 0, msgAddIdentity}, tc.add...)
		cn := &conn{srv: ts.srv, ep: &Endpoint{Channel: approvals.Channel{Kind: approvals.ChannelAgent}}, ctx: context.Background(), peer: self}
		cn.log = connLog{cn}
		if reply := process(cn, msg); (reply[4] == msgSuccess) != tc.added {
			t.Fatalf("%s: add answered %x", tc.name, reply)
		}
		for _, s := range tc.secrets {
			if bytes.Contains(msg, s) {
				t.Errorf("%s: a private number of the key is still in the request's buffer", tc.name)
			}
		}
	}
}

// A PKCS#11 add (ssh-add -s) leaves no copy of the token's PIN in the
// request's buffer, whether the provider is loaded or refused, and
// neither does ssh-add -e, which sends an empty PIN or any other.
func TestSmartcardPINCleared(t *testing.T) {
	ts := startServerWith(t, func(s *Server) { s.Providers = "!*" })
	self, err := procid.Host.Pin(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	pin := []byte("PIN-of-the-token-4711")
	for _, typ := range []byte{msgAddSmartcardKey, msgAddSmartcardKeyConstrained, msgRemoveSmartcardKey} {
		msg := append([]byte{0, 0, 0, 0, typ}, ssh.Marshal(struct{ Provider, PIN string }{"/usr/lib/p11.so", string(pin)})...)
		if typ == msgAddSmartcardKeyConstrained {
			msg = append(msg, constrainConfirm)
		}
		cn := &conn{srv: ts.srv, ep: &Endpoint{Channel: approvals.Channel{Kind: approvals.ChannelAgent}}, ctx: context.Background(), peer: self}
		cn.log = connLog{cn}
		if reply := process(cn, msg); reply[4] != msgFailure {
			t.Fatalf("message %d answered %x", typ, reply)
		}
		if bytes.Contains(msg, pin) {
			t.Errorf("message %d: the PIN is still in the request's buffer", typ)
		}
	}
}

// The passphrase of a lock or an unlock (ssh-add -x, -X) is cleared from
// the request once used, and that of a lock refused because the agent is
// locked already.
func TestLockPassphraseCleared(t *testing.T) {
	ts := startServer(t)
	self, err := procid.Host.Pin(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	pass := []byte("passphrase-of-the-lock")
	for i, typ := range []byte{msgLock, msgLock, msgUnlock} {
		msg := append([]byte{0, 0, 0, 0, typ}, ssh.Marshal(struct{ S string }{string(pass)})...)
		cn := &conn{srv: ts.srv, ep: &Endpoint{Channel: approvals.Channel{Kind: approvals.ChannelAgent}}, ctx: context.Background(), peer: self}
		cn.log = connLog{cn}
		if reply := process(cn, msg); (reply[4] == msgSuccess) != (i != 1) {
			t.Fatalf("message %d answered %x", typ, reply)
		}
		if bytes.Contains(msg, pass) {
			t.Errorf("message %d: the passphrase is still in the request's buffer", typ)
		}
	}
}

// runner returns a function that runs an OpenSSH tool on the agent ts
// serves, with stdin as its input, and returns its standard output.
func (ts *testServer) runner(t *testing.T) func(stdin string, name string, args ...string) string {
	return func(stdin string, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Env = append(os.Environ(), "SSH_AUTH_SOCK="+ts.sock)
		cmd.Stdin = strings.NewReader(stdin)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, stderr.String())
		}
		return string(out)
	}
}

// ssh-add adds RSA, ECDSA and Ed25519 keys written by ssh-keygen, and
// ssh-keygen -Y sign (git's commit signing) signs with each through the
// agent alone.
func TestSSHAddKeyTypes(t *testing.T) {
	ts := startServer(t)
	dir := t.TempDir()
	run := ts.runner(t)
	for _, kt := range [][]string{{"rsa", "3072"}, {"ecdsa", "256"}, {"ecdsa", "384"}, {"ecdsa", "521"}, {"ed25519", "256"}} {
		key := filepath.Join(dir, kt[0]+kt[1])
		run("", "ssh-keygen", "-q", "-t", kt[0], "-b", kt[1], "-N", "", "-C", key, "-f", key)
		run("", "ssh-add", key)
		if err := os.Remove(key); err != nil {
			t.Fatal(err)
		}
		if out := run("", "ssh-add", "-l"); !strings.Contains(out, key) {
			t.Fatalf("ssh-add -l after adding %s: %s", key, out)
		}
		sig := run("a commit", "ssh-keygen", "-Y", "sign", "-n", "git", "-f", key+".pub")
		if err := os.WriteFile(key+".sig", []byte(sig), 0o600); err != nil {
			t.Fatal(err)
		}
		run("a commit", "ssh-keygen", "-Y", "check-novalidate", "-n", "git", "-s", key+".sig")
	}
}
