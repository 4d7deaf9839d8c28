package e2e

import (
	"net"
	"strings"
	"testing"
)

// Control requests as long as the socket takes, each cut short before
// its newline, on as many control connections as a user may hold: what
// they hold together is bounded, one more client is served once one of
// them has been idle a second, and the control socket answers once they
// are gone.
func TestPartialControlRequestsHoldBoundedMemory(t *testing.T) {
	const (
		conns = 256      // a user's control connections
		bound = 48 << 10 // KiB the gateway may grow by
	)
	e := newEnv(t)
	e.Config(`approval = "none"`)
	a := e.StartAgent()
	before := rss(t, a.PID())
	line := []byte(`{"op":"status","args":{"x":"` + strings.Repeat("a", 256<<10-64))
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for range conns {
		c, err := net.Dial("unix", a.Socket+".ctl")
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		go c.Write(line)
	}
	// The requests before it were read, as far as they were taken.
	statusAtTheBound(t, e, "with a user's control connections held")
	grewAtMost(t, a.PID(), before, bound, "with a user's control requests cut short")
	for _, c := range held {
		c.Close()
	}
	held = nil
	e.MustRun("postern", "status")
}
