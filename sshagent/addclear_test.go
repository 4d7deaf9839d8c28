package sshagent

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"log/slog"
	"os"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/internal/procid"
)

// An add the agent refuses leaves no private key (nor a token's PIN) in
// its request, also one it could not parse (a key type it does not take,
// as ssh-add sends an XMSS key, or a key cut short), and a lock that
// does not parse leaves no passphrase: OpenSSH's agent clears every
// request it frees.
func TestRefusedAddLeavesNoKey(t *testing.T) {
	secret := bytes.Repeat([]byte{0x5a}, 64)
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	cut := ed25519Add(k, "cut", nil)
	cut = cut[:len(cut)-len("cut")-4-8]
	for name, msg := range map[string][]byte{
		"unsupported type": append([]byte{msgAddIdentity}, ssh.Marshal(struct {
			T       string
			Secret  []byte
			Comment string
		}{"ssh-xmss@openssh.com", secret, "xmss"})...),
		"ed25519 cut short": cut,
		"PKCS#11 PIN": append([]byte{msgAddSmartcardKey}, ssh.Marshal(struct {
			Provider string
			PIN      []byte
		}{"/nonexistent/p11.so", secret})...),
		"PKCS#11 PIN cut short": append([]byte{msgAddSmartcardKey}, ssh.Marshal(struct {
			Provider string
			PIN      []byte
		}{"/nonexistent/p11.so", secret})[:60]...),
		"passphrase cut short": append([]byte{msgLock}, ssh.Marshal(struct{ P []byte }{secret})[:40]...),
	} {
		self, err := procid.Host.Pin(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		keys := &Keyring{}
		srv := &Server{Keys: keys, Decider: &decider{}, Locker: locker{keys}, Procs: procid.Host, Log: slog.New(slog.DiscardHandler), Providers: "!*"}
		cn := &conn{srv: srv, ep: &Endpoint{}, ctx: context.Background(), peer: self}
		cn.log = connLog{cn}
		if r := cn.dispatch(msg); r[4] != msgFailure {
			t.Fatalf("%s: reply %d", name, r[4])
		}
		if bytes.Contains(msg, secret[:16]) || bytes.Contains(msg, k[:32]) {
			t.Errorf("%s: the refused request's secret is still in it", name)
		}
	}
}
