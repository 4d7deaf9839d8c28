package sshagent

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

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
