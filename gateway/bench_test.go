package gateway

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"net"
	"os"
	"sync"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/postern/postern/gateway/api"
)

// BenchmarkSignPath signs with an Ed25519 key through a gateway running
// in this process, with approval = "none": audited (the key in the vault,
// the vault unlocked, the audit log on, as "postern vault init" sets it
// up) and unaudited (no vault, the key added over the socket), on one
// connection in turn and from 8 connections at once. It is the gateway's
// whole signing path (peer re-check, decision, record, signature) for CPU
// profiles:
//
//	go test -run '^$' -bench SignPath -cpuprofile cpu.out ./gateway/
//
// The side-by-side figures with ssh-agent are internal/e2e's.
func BenchmarkSignPath(b *testing.B) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	pub, err := ssh.NewPublicKey(priv.Public())
	if err != nil {
		b.Fatal(err)
	}
	data := []byte("a session identifier and a userauth request, roughly this long, to be signed")
	for _, audited := range []bool{true, false} {
		name := "audited"
		if !audited {
			name = "unaudited"
		}
		b.Run(name, func(b *testing.B) {
			pass := []byte("bench pass")
			_, sock := startGatewayWith(b, func(dir string) {
				os.WriteFile(configFile(b, dir), []byte("approval = \"none\"\n"), 0o600)
				if !audited {
					return
				}
				initVaultWithKey(b, pass, priv)
			})
			if audited {
				if err := api.NewClient(sock).Unlock(context.Background(), api.UnlockArgs{Passphrase: append([]byte(nil), pass...)}); err != nil {
					b.Fatal(err)
				}
			}
			dial := func() agent.ExtendedAgent {
				c, err := net.Dial("unix", sock)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { c.Close() })
				return agent.NewClient(c)
			}
			if !audited {
				if err := dial().Add(agent.AddedKey{PrivateKey: priv}); err != nil {
					b.Fatal(err)
				}
			}
			b.Run("sequential", func(b *testing.B) {
				cl := dial()
				for i := 0; i < b.N; i++ {
					if _, err := cl.Sign(pub, data); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("concurrent8", func(b *testing.B) {
				var wg sync.WaitGroup
				for w := range 8 {
					cl := dial()
					wg.Add(1)
					go func(n int) {
						defer wg.Done()
						for range n {
							if _, err := cl.Sign(pub, data); err != nil {
								b.Error(err)
								return
							}
						}
					}((b.N + 7 - w) / 8)
				}
				wg.Wait()
			})
		})
	}
}
