package e2e

// Faults the gateway must outlive: running out of descriptors, a flood
// of connections, hostile peers. It keeps serving, loses nothing, and
// says what happened.

import (
	"net"
	"strings"
	"testing"
)

// With every descriptor taken by idle connections (to the agent socket,
// bounded per user, and to the control socket), accept and the
// identification of peers fail with EMFILE: the gateway pauses, sheds the
// connections idle the longest, and goes on. It never exits (which would
// take the keys and every grant with it). Once the storm of new
// connections is over, with the idle agent connections still held, a new
// client is served: the bound makes room for it.
func TestDescriptorsExhausted(t *testing.T) {
	need(t, "ssh-add", "ssh-keygen")
	e := newEnv(t)
	e.Config(`approval = "none"`)
	a := e.StartAgentWithFiles(160)
	k := e.Keygen("k", "ed25519", 0, "")
	e.AddKey(k)
	flood := func(sock string, n int) []net.Conn {
		var cs []net.Conn
		for range n {
			c, err := net.Dial("unix", sock)
			if err != nil {
				t.Fatalf("dial %s: %v", sock, err)
			}
			cs = append(cs, c)
		}
		return cs
	}
	closeAll := func(cs []net.Conn) {
		for _, c := range cs {
			c.Close()
		}
	}
	idle := flood(a.Socket, 400)
	defer closeAll(idle)
	storm := flood(a.Socket+".ctl", 400)
	defer closeAll(storm)
	a.WaitLog(t, "cannot accept a connection")
	closeAll(storm)
	for i := 0; ; i++ {
		select {
		case <-a.done:
			t.Fatalf("the gateway exited:\n%s", tail(a.Log(), 3000))
		default:
		}
		r := e.Run("ssh-add", "-l")
		if r.Code == 0 && strings.Contains(r.Stdout, "ED25519") {
			break
		}
		if i == 20 {
			t.Fatalf("ssh-add -l with idle connections held: %s\nagent log:\n%s", r, tail(a.Log(), 3000))
		}
		sleep10ms() // the storm's last connections are still being refused
	}
	e.MustRun("postern", "status")
	closeAll(idle)
	if r := e.Run("ssh-add", "-l"); r.Code != 0 {
		t.Fatalf("ssh-add -l after the flood: %s", r)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
