package e2e

// Keys that cannot poison the list: what any process may add to the
// agent is checked as OpenSSH 10 checks it.

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// A process adds an RSA key with a 1-bit modulus, and ssh-add offers a
// 1024-bit one: both are refused with the reason in the log, and OpenSSH
// still lists the agent's keys and logs in with them.
func TestKeysThatPoisonTheListAreRefused(t *testing.T) {
	need(t, "ssh-add", "ssh-keygen", "ssh", "sshd")
	e := newEnv(t)
	e.Config(`approval = "none"`)
	a := e.StartAgent()
	good := e.Keygen("good", "ed25519", 0, "")
	e.AddKey(good)
	small := e.Keygen("small", "rsa", 1024, "")
	if r := e.Run("ssh-add", small); r.Code == 0 {
		t.Fatalf("ssh-add of a 1024-bit RSA key succeeded: %s", r)
	}
	a.WaitLog(t, "refusing to add key: unsupported key: RSA key of 1024 bits is too weak")

	c, err := net.Dial("unix", a.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	one := big.NewInt(1)
	msg := ssh.Marshal(struct {
		Type                byte
		Name                string
		N, E, D, Iqmp, P, Q *big.Int
		Comment             string
	}{17, ssh.KeyAlgoRSA, one, big.NewInt(3), one, one, one, one, "poison"})
	c.Write(append([]byte{0, 0, byte(len(msg) >> 8), byte(len(msg))}, msg...))
	var rep [5]byte
	if _, err := c.Read(rep[:]); err != nil || rep[4] != 5 {
		t.Fatalf("adding a 1-bit RSA key: reply %v %v, want SSH_AGENT_FAILURE", rep, err)
	}
	a.WaitLog(t, "RSA key of 1 bits is too weak")
	// The x/crypto client, as any library would send it, is refused too.
	tiny := &rsa.PrivateKey{PublicKey: rsa.PublicKey{N: big.NewInt(187), E: 3}, D: big.NewInt(107), Primes: []*big.Int{big.NewInt(11), big.NewInt(17)}}
	tiny.Precompute()
	if err := agent.NewClient(c).Add(agent.AddedKey{PrivateKey: tiny}); err == nil {
		t.Fatal("an 8-bit RSA key was added")
	}

	l := e.MustRun("ssh-add", "-l").Stdout
	if !strings.Contains(l, fingerprint(t, e, good)) || strings.Count(strings.TrimSpace(l), "\n") != 0 {
		t.Fatalf("ssh-add -l after the refusals:\n%s", l)
	}
	sshd := startSSHD(t, pubKey(t, good)+"\n")
	if out := e.MustRun("ssh", sshd.SSHArgs(sshd.Target(), "echo", "in")...); strings.TrimSpace(out.Stdout) != "in" {
		t.Fatalf("login after the refusals: %s", out)
	}
}

// rsaWithExponent returns an RSA key of 2048 bits with the public
// exponent e.
func rsaWithExponent(t *testing.T, e int) *rsa.PrivateKey {
	one := big.NewInt(1)
	for {
		p, err := rand.Prime(rand.Reader, 1024)
		if err != nil {
			t.Fatal(err)
		}
		q, _ := rand.Prime(rand.Reader, 1024)
		pm, qm := new(big.Int).Sub(p, one), new(big.Int).Sub(q, one)
		lambda := new(big.Int).Div(new(big.Int).Mul(pm, qm), new(big.Int).GCD(nil, nil, pm, qm))
		d := new(big.Int).ModInverse(big.NewInt(int64(e)), lambda)
		if d == nil || new(big.Int).Mul(p, q).BitLen() != 2048 {
			continue
		}
		k := &rsa.PrivateKey{PublicKey: rsa.PublicKey{N: new(big.Int).Mul(p, q), E: e}, D: d, Primes: []*big.Int{p, q}}
		k.Precompute()
		return k
	}
}

// ssh-add offers an RSA key whose public exponent is larger than 24 bits,
// which OpenSSH reads: the agent refuses it, with the reason in the log,
// rather than list a key whose every use it refuses (it cannot read the
// key a sign request names).
func TestKeyTheAgentCannotSignWithIsRefused(t *testing.T) {
	need(t, "ssh-add", "ssh-keygen")
	e := newEnv(t)
	e.Config(`approval = "none"`)
	a := e.StartAgent()
	block, err := ssh.MarshalPrivateKey(rsaWithExponent(t, 1<<25+1), "large exponent")
	if err != nil {
		t.Fatal(err)
	}
	key := e.WriteFile("large-e", string(pem.EncodeToMemory(block)), 0o600)
	pub := e.MustRun("ssh-keygen", "-y", "-f", key).Stdout
	e.WriteFile("large-e.pub", pub, 0o600)
	if r := e.Run("ssh-add", key); r.Code == 0 {
		msg := e.WriteFile("msg", "signed\n", 0o600)
		os.Remove(key)
		r := e.Run("ssh-keygen", "-Y", "sign", "-n", "file", "-f", key+".pub", msg)
		t.Fatalf("ssh-add of an RSA key with a 26-bit exponent succeeded, and a signature with it: %s\n%s", r, a.Log())
	}
	a.WaitLog(t, "refusing to add key: unsupported key: a key the agent could not read back from a sign request (ssh: exponent too large)")
}
