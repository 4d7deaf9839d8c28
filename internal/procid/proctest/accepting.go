package proctest

import (
	"net"
	"testing"
	"time"
)

// WaitAccepting waits until a program it started accepts connections on
// the unix socket sock: the socket file is there from bind, before
// listen, and a client that came between the two would be refused.
func WaitAccepting(t testing.TB, sock string) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c, err := net.Dial("unix", sock)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing accepts connections on %s: %v", sock, err)
		}
	}
}
