package procid

import (
	"net"

	"golang.org/x/sys/unix"
)

// PassCredentials asks the kernel to attach the sender's credentials to
// every message on connections accepted from l (accepted sockets inherit
// the flag). [SenderConn] reads them.
func PassCredentials(l *net.UnixListener) error {
	raw, err := l.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PASSCRED, 1)
	}); err != nil {
		return err
	}
	return serr
}

// PassingCredentials reports whether l was already prepared with
// PassCredentials. A connection made to a listener before it was keeps
// no credentials for what it wrote then (a socket a service manager made
// without PassCredentials=yes, connected to before the agent started),
// and its request is refused.
func PassingCredentials(l *net.UnixListener) (bool, error) {
	raw, err := l.SyscallConn()
	if err != nil {
		return false, err
	}
	var v int
	var gerr error
	if err := raw.Control(func(fd uintptr) {
		v, gerr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PASSCRED)
	}); err != nil {
		return false, err
	}
	return v == 1, gerr
}

// SenderConn reads from a connection accepted on a listener prepared with
// PassCredentials and remembers which processes wrote the bytes read since
// the last ResetSenders. The kernel never merges the writes of two senders
// into one read while the flag is set.
type SenderConn struct {
	*net.UnixConn
	oob    []byte
	sender int
	mixed  bool
}

// NewSenderConn wraps c.
func NewSenderConn(c *net.UnixConn) *SenderConn {
	return &SenderConn{UnixConn: c, oob: make([]byte, unix.CmsgSpace(unix.SizeofUcred))}
}

// Read reads like net.Conn's Read and records the sender of the bytes.
func (c *SenderConn) Read(b []byte) (int, error) {
	n, oobn, _, _, err := c.ReadMsgUnix(b, c.oob)
	if n > 0 {
		pid := -1
		if msgs, perr := unix.ParseSocketControlMessage(c.oob[:oobn]); perr == nil {
			for i := range msgs {
				if cred, err := unix.ParseUnixCredentials(&msgs[i]); err == nil {
					pid = int(cred.Pid)
				}
			}
		}
		switch {
		case c.sender == 0:
			c.sender = pid
		case c.sender != pid:
			c.mixed = true
		}
	}
	return n, err
}

// Sender returns the pid that wrote every byte read since ResetSenders,
// and known=true: on Linux the writer is always known. pid is -1 when
// several processes wrote or a chunk carried no credentials.
func (c *SenderConn) Sender() (pid int, known bool) {
	if c.mixed || c.sender <= 0 {
		return -1, true
	}
	return c.sender, true
}

// ResetSenders starts a new message.
func (c *SenderConn) ResetSenders() { c.sender, c.mixed = 0, false }
