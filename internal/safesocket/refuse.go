package safesocket

import (
	"net"
	"time"
)

// A client refused (every connection of its user busy, or no descriptor
// to identify it with) is told why: the server reads its request and
// answers it, so that the client reports the refusal and not a broken
// pipe. Each refusal holds the connection's descriptor while it waits for
// the request. A program of the user's that floods a socket at its bound
// with connections that send nothing would hold a descriptor for each
// for as long as the wait lasts: kept short (RefuseTime) and few at once
// (maxRefusing), the refusals hold at most maxRefusing descriptors
// between them, each for a second at most, and a client that comes past
// them is closed unanswered.

// RefuseTime bounds how long a refused connection is kept: long enough
// to read the client's request and answer it, short enough that a flood
// of refused connections holds few descriptors.
const RefuseTime = time.Second

// maxRefusing bounds the refusals under way at once, across the sockets.
const maxRefusing = 64

// refusing holds a token for each refusal under way.
var refusing = make(chan struct{}, maxRefusing)

// Refuse calls answer to tell c's client why it is refused, with c's
// deadline RefuseTime ahead, and reports whether it did: when
// maxRefusing refusals are under way it does not, and the caller closes
// c unanswered. The caller closes c after Refuse returns either way.
func Refuse(c *net.UnixConn, answer func(*net.UnixConn)) bool {
	select {
	case refusing <- struct{}{}:
	default:
		return false
	}
	defer func() { <-refusing }()
	c.SetDeadline(time.Now().Add(RefuseTime))
	answer(c)
	return true
}
