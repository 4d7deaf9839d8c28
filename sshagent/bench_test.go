package sshagent

import (
	"crypto/rand"
	"crypto/rsa"
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
