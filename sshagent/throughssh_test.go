package sshagent

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/internal/procid"
)

// why@postern answers a client on this machine, and refuses one that came
// through ssh (a forwarded agent connection is bound so): the host it is
// forwarded to is not told what was decided for the person's programs.
func TestWhyRefusedThroughSSH(t *testing.T) {
	ts := startServerWith(t, func(s *Server) {
		s.Why = func(*procid.Peer, approvals.Channel) ([]byte, error) { return []byte(`{"last":"secret"}`), nil }
	})
	local := ts.rawConn(t)
	if _, err := AskExtension(local, ExtWhy, time.Now().Add(10*time.Second)); err != nil {
		t.Fatalf("a local client's why: %v", err)
	}
	host := newHost(t)
	for _, fwd := range []bool{true, false} {
		c := ts.rawConn(t)
		writeFrame(c, append([]byte{msgExtension}, ssh.Marshal(extensionMsg{Name: ExtSessionBind, Contents: host.bind([]byte("sid"), fwd)})...))
		if reply := readReply(t, c); reply != msgSuccess {
			t.Fatalf("session-bind: reply %d", reply)
		}
		if _, err := AskExtension(c, ExtWhy, time.Now().Add(10*time.Second)); !errors.Is(err, ErrExtensionRefused) {
			t.Fatalf("why after a session-bind (forwarding %v): %v, want it refused", fwd, err)
		}
	}
}

// A connection that came through ssh neither locks nor unlocks the
// agent: ssh-add -X takes the vault's passphrase, which a host the agent
// is forwarded to would guess, and a lock would shut the person out.
func TestNoLockOrUnlockThroughSSH(t *testing.T) {
	ts := startServer(t)
	host := newHost(t)
	bound := func() agent.ExtendedAgent {
		ag, _ := ts.client(t)
		if _, err := ag.Extension(ExtSessionBind, host.bind([]byte("sid"), true)); err != nil {
			t.Fatal(err)
		}
		return ag
	}
	if err := bound().Lock([]byte("pass")); err == nil || ts.srv.Keys.Locked() {
		t.Fatalf("a connection through ssh locked the agent: %v", err)
	}
	own, _ := ts.client(t)
	if err := own.Lock([]byte("pass")); err != nil {
		t.Fatal(err)
	}
	if err := bound().Unlock([]byte("pass")); err == nil || !ts.srv.Keys.Locked() {
		t.Fatalf("a connection through ssh unlocked the agent: %v", err)
	}
}
