package e2e

import (
	"bytes"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/bastion"
)

// bastionClient speaks SSH to the bastion's socket with x/crypto's
// client, as a program other than ssh may.
func (b *bastionWorld) bastionClient(t *testing.T) *ssh.Client {
	t.Helper()
	ca, _, _, _, err := ssh.ParseAuthorizedKey([]byte(strings.TrimPrefix(string(mustRead(t, b.e.Path("state", "postern", "bastion_known_hosts"))), "@cert-authority * ")))
	if err != nil {
		t.Fatal(err)
	}
	target := bastion.Target{User: b.sshd.User, Host: "127.0.0.1", Port: b.sshd.Port}
	c, err := bastion.Connect(b.e.Path("run", "postern", "bastion.sock"), target)
	if err != nil {
		t.Fatal(err)
	}
	checker := &ssh.CertChecker{IsHostAuthority: func(auth ssh.PublicKey, _ string) bool { return bytes.Equal(auth.Marshal(), ca.Marshal()) }}
	conn, chans, reqs, err := ssh.NewClientConn(c, "127.0.0.1:22", &ssh.ClientConfig{User: target.User, HostKeyCallback: checker.CheckHostKey})
	if err != nil {
		t.Fatal(err)
	}
	client := ssh.NewClient(conn, chans, reqs)
	t.Cleanup(func() { client.Close() })
	return client
}

// A malformed request from the client is refused by the bastion, not
// passed on: sshd drops the whole connection on a malformed window
// change, which would kill the command and leave its outcome unknown.
func TestBastionMalformedRequestIsRefusedNotRelayed(t *testing.T) {
	b := newBastionWorld(t, "")
	client := b.bastionClient(t)
	s, err := client.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	s.Stdout = &out
	const command = "sleep 1; echo done"
	if err := s.Start(command); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.SendRequest("window-change", true, []byte("x")); ok || err != nil {
		t.Errorf("malformed window-change: ok %v, err %v", ok, err)
	}
	if err := s.Wait(); err != nil || out.String() != "done\n" {
		t.Fatalf("the command: %v, output %q", err, out.String())
	}
	if e := b.entryFor(command); e.Status != "COMPLETED" {
		t.Fatalf("journal: %s", e.Status)
	}
}
