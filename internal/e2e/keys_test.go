package e2e

// Keys that cannot poison the list: what any process may add to the
// agent is checked as OpenSSH 10 checks it.

import (
	"crypto/rsa"
	"math/big"
	"net"
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
