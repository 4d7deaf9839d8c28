package sshagent

import (
	"fmt"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// Idle clients hold none of the upstream agent's connections: a client
// whose connection goes bare gives its link up (kept for another client,
// or closed when it carried session bindings), and its next request gets
// a link again, with its bindings sent again.
func TestIdleClientsLeaveUpstreamLinks(t *testing.T) {
	up := startUpstream(t)
	upKey := up.addKey(t, "held upstream")
	// The clients go bare 2 s after their last request, not 100 ms:
	// every one has listed before the first goes bare and gives up its
	// upstream link, on a machine as slow as the race detector under
	// load (23 clients took 160 ms there).
	ts := startServerWith(t, func(s *Server) {
		s.Upstream = &UpstreamAgent{Socket: up.sock, Changes: UpstreamRefuse}
		s.bare.after = 2 * time.Second
	})
	const unbound, bound = 20, 3
	// One client for each connection: a client reads its connection's
	// replies in a goroutine of its own.
	var clients []agent.ExtendedAgent
	for range unbound {
		ag := agent.NewClient(ts.rawConn(t))
		if _, err := ag.List(); err != nil {
			t.Fatal(err)
		}
		clients = append(clients, ag)
	}
	host := newHost(t)
	for i := range bound {
		c := ts.rawConn(t)
		sid := fmt.Appendf(nil, "session %d", i)
		c.Write(frame(append([]byte{msgExtension}, ssh.Marshal(extensionMsg{Name: ExtSessionBind, Contents: host.bind(sid, false)})...)))
		if typ := readReply(t, c); typ != msgSuccess {
			t.Fatalf("session-bind: reply %d", typ)
		}
		ag := agent.NewClient(c)
		if _, err := ag.List(); err != nil {
			t.Fatal(err)
		}
		clients = append(clients, ag)
	}
	if n := up.openConns(); n != unbound+bound {
		t.Fatalf("%d clients listing at once: the upstream has %d connections", unbound+bound, n)
	}
	waitFor(t, "the clients to go bare", func() bool { return ts.srv.bare.n.Load() == unbound+bound })
	waitFor(t, "the idle clients' upstream connections to close", func() bool { return up.openConns() <= maxIdleLinks })

	binds := up.bindCount()
	for _, ag := range []agent.ExtendedAgent{clients[0], clients[len(clients)-1]} {
		if sig, err := ag.Sign(upKey, []byte("data")); err != nil || upKey.Verify([]byte("data"), sig) != nil {
			t.Fatalf("sign after going bare: %v", err)
		}
	}
	if got := up.bindCount(); got != binds+1 {
		t.Fatalf("the bound client's binding was sent %d more times on its new link, want 1", got-binds)
	}
}
