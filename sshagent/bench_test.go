package sshagent

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"net"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// BenchmarkConnPerSign measures the server side of a connection that
// signs once: peer identification at accept, the per-request re-check,
// parsing and signing.
func BenchmarkConnPerSign(b *testing.B) {
	ts := startServer(b)
	ts.srv.Log = discardLogger()
	k, _ := rsa.GenerateKey(rand.Reader, 3072)
	ag, _ := ts.client(b)
	ag.Add(agent.AddedKey{PrivateKey: k})
	pub, _ := ssh.NewPublicKey(&k.PublicKey)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c, err := net.Dial("unix", ts.sock)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := agent.NewClient(c).SignWithFlags(pub, []byte("data"), agent.SignatureFlagRsaSha256); err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}

// BenchmarkUpstreamGate measures what gating an upstream agent adds to a
// signature on one connection: the same upstream (x/crypto's keyring on
// a socket) asked directly and through the gate (the per-request
// re-check, the lookup, the decision and the forwarding).
func BenchmarkUpstreamGate(b *testing.B) {
	up := startUpstream(b)
	pub := up.addKey(b, "upstream")
	ts := startGated(b, up, UpstreamRefuse)
	ts.srv.Log = discardLogger()
	data := []byte("a session identifier and a userauth request, roughly this long, to be signed")
	for _, via := range []struct{ name, sock string }{{"direct", up.sock}, {"gate", ts.sock}} {
		b.Run("via="+via.name, func(b *testing.B) {
			c, err := net.Dial("unix", via.sock)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			ag := agent.NewClient(c)
			for i := 0; i < b.N; i++ {
				if _, err := ag.Sign(pub, data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLookupAmongKeys measures what each request pays to find its
// key, and each listing to list the keys, with 1 and with 20 keys held
// (half Ed25519, half RSA; the key asked for added last): an identity's
// encoding is made once, so the cost grows with the keys compared, not
// with encodings made again for each.
func BenchmarkLookupAmongKeys(b *testing.B) {
	for _, n := range []int{1, 20} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			k := &Keyring{}
			var last *Identity
			for i := range n {
				var priv any
				if i%2 == 0 {
					_, priv, _ = ed25519.GenerateKey(rand.Reader)
				} else {
					priv, _ = rsa.GenerateKey(rand.Reader, 2048)
				}
				id, err := NewIdentity(priv, nil, "k")
				if err != nil {
					b.Fatal(err)
				}
				if err := k.Add(id); err != nil {
					b.Fatal(err)
				}
				last = id
			}
			key, err := ssh.ParsePublicKey(last.Key.Marshal())
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				if id, err := k.Lookup(key); err != nil || id != last {
					b.Fatalf("lookup: %v", err)
				}
				if ids, err := k.Identities(); err != nil || len(ids) != n {
					b.Fatalf("listing: %d keys, %v", len(ids), err)
				}
			}
		})
	}
}
