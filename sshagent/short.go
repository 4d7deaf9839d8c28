package sshagent

import (
	"encoding/binary"
	"io"
	"net"
)

// refuseShort answers a client the gateway cannot identify for want of
// descriptors or memory, or accepted with the descriptor it held in
// reserve, out of every other (safesocket.Serve). Its first request is read and
// answered SSH_AGENT_FAILURE (ssh-add says the agent refused the
// operation), and the connection is closed. Nothing is recorded of a
// request whose sender is unknown; the gateway's log says it is out of
// descriptors.
func refuseShort(c *net.UnixConn) {
	var hdr [4]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return
	}
	if n := binary.BigEndian.Uint32(hdr[:]); n <= MaxMessage {
		io.CopyN(io.Discard, c, int64(n))
	}
	c.Write(replyFailure)
}
