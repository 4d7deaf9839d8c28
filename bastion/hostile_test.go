package bastion

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// A client cannot make the bastion hold an unbounded environment: past
// a few dozen variables, or a few kilobytes of them, env requests are
// refused, as OpenSSH's sshd refuses them past its own bound.
func TestRelayBoundsTheEnvironment(t *testing.T) {
	w := newWorld(t)
	sess, err := w.dial().NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	value := strings.Repeat("x", 1000)
	accepted := 0
	for i := range 1000 {
		if sess.Setenv(fmt.Sprintf("LC_%d", i), value) == nil {
			accepted++
		}
	}
	if accepted > maxEnvVars {
		t.Fatalf("%d environment variables accepted, want at most %d", accepted, maxEnvVars)
	}
	if accepted == 0 {
		t.Fatal("no environment variable accepted")
	}
}

// A client cannot open session channels without end on one connection:
// past as many as OpenSSH's sshd serves by default, a new one is refused.
func TestRelayBoundsSessionsPerConnection(t *testing.T) {
	w := newWorld(t)
	c := w.dial()
	var open []*ssh.Session
	defer func() {
		for _, s := range open {
			s.Close()
		}
	}()
	for i := range 3 * maxSessions {
		s, err := c.NewSession()
		if err != nil {
			if i < maxSessions {
				t.Fatalf("session %d refused: %v", i+1, err)
			}
			break
		}
		open = append(open, s)
	}
	if len(open) > maxSessions {
		t.Fatalf("%d sessions open on one connection, want at most %d", len(open), maxSessions)
	}
	// A session that ends makes room for another.
	open[0].Close()
	open = open[1:]
	for range 50 {
		s, err := c.NewSession()
		if err == nil {
			open = append(open, s)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no session once one ended")
}

// Port forwarding, streamlocal forwarding and X11 never reach a host:
// the bastion refuses the channels and the global requests.
func TestRelayRefusesForwarding(t *testing.T) {
	w := newWorld(t)
	c := w.dial()
	for _, typ := range []string{"direct-tcpip", "direct-streamlocal@openssh.com", "x11", "auth-agent@openssh.com"} {
		if ch, _, err := c.OpenChannel(typ, nil); err == nil {
			ch.Close()
			t.Errorf("channel %s opened", typ)
		}
	}
	for _, typ := range []string{"tcpip-forward", "streamlocal-forward@openssh.com", "no-more-sessions@openssh.com"} {
		if ok, _, err := c.SendRequest(typ, true, nil); ok || err != nil {
			t.Errorf("global request %s: ok %v, err %v", typ, ok, err)
		}
	}
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	for _, typ := range []string{"x11-req", "auth-agent-req@openssh.com", "signal"} {
		if ok, _ := sess.SendRequest(typ, true, nil); ok {
			t.Errorf("session request %s accepted", typ)
		}
	}
	if len(w.host.seen()) != 0 || w.host.logins() != 0 {
		t.Fatal("the host was reached")
	}
}
