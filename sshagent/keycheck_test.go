package sshagent

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"io"
	"log/slog"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/postern/postern/internal/syncbuf"
)

// addRSA is SSH_AGENTC_ADD_IDENTITY for an RSA key with the given
// parameters, as any client may send it.
func addRSA(n, e, d, iqmp, p, q *big.Int, comment string) []byte {
	return ssh.Marshal(struct {
		Type                byte
		Name                string
		N, E, D, Iqmp, P, Q *big.Int
		Comment             string
	}{17, ssh.KeyAlgoRSA, n, e, d, iqmp, p, q, comment})
}

// readReply reads one reply and returns its type.
func readReply(t *testing.T, c net.Conn) byte {
	t.Helper()
	typ, _ := readAnswer(t, c)
	return typ
}

// readAnswer reads one reply and returns its type and payload.
func readAnswer(t *testing.T, c net.Conn) (byte, []byte) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var hdr [5]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		t.Fatal(err)
	}
	rest := make([]byte, int(hdr[0])<<24|int(hdr[1])<<16|int(hdr[2])<<8|int(hdr[3])-1)
	if _, err := io.ReadFull(c, rest); err != nil {
		t.Fatal(err)
	}
	return hdr[4], rest
}

// A key OpenSSH cannot parse would make every client fail to list the
// agent's identities (and so every login through it). Such keys are
// refused at the door, with the reason in the log, and the list stays
// readable.
func TestAddRefusesKeysThatPoisonTheList(t *testing.T) {
	logged := &syncbuf.Buffer{}
	ts := startServer(t, slog.New(slog.NewTextHandler(logged, nil)))
	good, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	cl, _ := ts.client(t)
	if err := cl.Add(agent.AddedKey{PrivateKey: good, Comment: "good"}); err != nil {
		t.Fatal(err)
	}
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	small.Precompute()
	one := big.NewInt(1)
	bad, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	bad.D = new(big.Int).Add(bad.D, one) // a scalar that is not the point's
	for _, tt := range []struct {
		name string
		msg  []byte
		want string
	}{
		{"1-bit modulus", addRSA(one, big.NewInt(3), one, one, one, one, "poison"), "RSA key of 1 bits is too weak"},
		{"1024 bits", addRSA(small.N, big.NewInt(int64(small.E)), small.D, small.Precomputed.Qinv, small.Primes[0], small.Primes[1], "small"), "RSA key of 1024 bits is too weak"},
	} {
		c := ts.rawConn(t)
		writeFrame(c, tt.msg)
		if r := readReply(t, c); r != 5 {
			t.Errorf("%s: reply %d, want SSH_AGENT_FAILURE", tt.name, r)
		}
		if l := logged.String(); !strings.Contains(l, "refusing to add key: unsupported key: "+tt.want) {
			t.Errorf("%s: the log does not say why:\n%s", tt.name, l)
		}
	}
	if err := cl.Add(agent.AddedKey{PrivateKey: bad, Comment: "inconsistent"}); err == nil {
		t.Error("an ECDSA key whose point is not its scalar's was added")
	}
	keys, err := cl.List()
	if err != nil || len(keys) != 1 || keys[0].Comment != "good" {
		t.Fatalf("list after the refusals: %v %v", keys, err)
	}
	if _, err := ssh.ParsePublicKey(keys[0].Blob); err != nil {
		t.Fatal(err)
	}
}
