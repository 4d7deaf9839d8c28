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

// startThroughBastion starts command on a session of a client of a new
// bastion world, its output gathered in out.
func startThroughBastion(t *testing.T, command string) (b *bastionWorld, client *ssh.Client, s *ssh.Session, out *bytes.Buffer) {
	t.Helper()
	b = newBastionWorld(t, "")
	client = b.bastionClient(t)
	s, err := client.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	out = &bytes.Buffer{}
	s.Stdout = out
	if err := s.Start(command); err != nil {
		t.Fatal(err)
	}
	return b, client, s, out
}

// A malformed request from the client is refused by the bastion, not
// passed on: sshd drops the whole connection on a malformed window
// change, which would kill the command and leave its outcome unknown.
func TestBastionMalformedRequestIsRefusedNotRelayed(t *testing.T) {
	const command = "sleep 1; echo done"
	b, _, s, out := startThroughBastion(t, command)
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

// A request whose strings hold a NUL byte (a terminal type, an
// environment variable, a signal name) is refused by the bastion, not
// passed on: sshd reads them as C strings and ends the whole connection
// on one, which would cut every command running on it.
func TestBastionNULInARequestIsRefusedNotRelayed(t *testing.T) {
	const command = "sleep 2; echo done"
	b, client, s, out := startThroughBastion(t, command)
	b.waitRunning(command)
	if ok, err := s.SendRequest("signal", true, ssh.Marshal(struct{ S string }{"TERM\x00"})); ok || err != nil {
		t.Errorf("a signal with a NUL: ok %v, err %v", ok, err)
	}
	for i, send := range []func(*ssh.Session) (bool, error){
		func(o *ssh.Session) (bool, error) {
			return o.SendRequest("pty-req", true, ssh.Marshal(struct {
				Term                         string
				Columns, Rows, Width, Height uint32
				Modes                        string
			}{"xterm\x00", 80, 24, 0, 0, "\x00"}))
		},
		func(o *ssh.Session) (bool, error) {
			return o.SendRequest("env", true, ssh.Marshal(struct{ Name, Value string }{"LC_X", "a\x00b"}))
		},
		func(o *ssh.Session) (bool, error) {
			return o.SendRequest("env", true, ssh.Marshal(struct{ Name, Value string }{"LC_X\x00", "a"}))
		},
	} {
		o, err := client.NewSession()
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := send(o); ok || err != nil {
			t.Errorf("request %d with a NUL: ok %v, err %v", i, ok, err)
		}
		o.Run("true")
		o.Close()
	}
	if err := s.Wait(); err != nil || out.String() != "done\n" {
		t.Fatalf("the command running beside them: %v, output %q", err, out.String())
	}
	if e := b.entryFor(command); e.Status != "COMPLETED" {
		t.Fatalf("journal: %s", e.Status)
	}
}
