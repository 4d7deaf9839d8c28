package bastion

import (
	"sync"

	gliderssh "github.com/gliderlabs/ssh"
	gossh "golang.org/x/crypto/ssh"
)

// sessionCount counts the session channels being served. gliderlabs/ssh
// serves each channel in a goroutine of its own and does not wait for it
// when the connection ends, so a connection's end does not mean that its
// command has recorded how it ended: a command that Stop cut off records
// its unknown outcome after its connection is gone, and Stop waits for
// that before the gateway closes the journal and the audit log.
type sessionCount struct {
	mu   sync.Mutex
	n    int
	zero chan struct{} // closed when n drops to 0; nil while n is 0
}

func (c *sessionCount) add() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 {
		c.zero = make(chan struct{})
	}
	c.n++
}

func (c *sessionCount) done() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n--
	if c.n == 0 {
		close(c.zero)
		c.zero = nil
	}
}

// idle returns a channel that is closed once no session is served. A
// session that starts later is not waited for: it starts on a connection
// that is ending, and runs no command once the server is stopping.
func (c *sessionCount) idle() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.zero == nil {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	return c.zero
}

// countedSession serves a session channel (handleSession), counted.
func (s *Server) countedSession(srv *gliderssh.Server, conn *gossh.ServerConn, nc gossh.NewChannel, ctx gliderssh.Context) {
	s.sessions.add()
	defer s.sessions.done()
	s.handleSession(srv, conn, nc, ctx)
}
