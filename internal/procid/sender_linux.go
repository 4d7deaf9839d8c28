package procid

import (
	"encoding/binary"
	"io"
	"net"
	"os"
	"syscall"
	"time"
	"unsafe"

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
//
// A read makes no garbage (a connection reads for every request): recvmsg
// is called without asking for the peer's address, and the credentials
// are parsed in place.
type SenderConn struct {
	*net.UnixConn
	raw    syscall.RawConn
	sender int
	mixed  bool

	// The bound on waiting that WaitAtMost set (0: none), and whether
	// the deadline for it is armed.
	limit time.Duration
	armed bool

	// One read's buffer and results, for recv; recvFn is recv, made once.
	p      []byte
	n      int
	oobn   int
	errno  error
	recvFn func(fd uintptr) bool
	oob    [oobSpace]byte
}

// oobSpace holds one SCM_CREDENTIALS message.
const oobSpace = (unix.SizeofCmsghdr + unix.SizeofUcred + 7) &^ 7

// NewSenderConn wraps c.
func NewSenderConn(c *net.UnixConn) *SenderConn {
	sc := &SenderConn{UnixConn: c}
	sc.raw, _ = c.SyscallConn() // fails only for a nil c, and so does every read
	sc.recvFn = sc.recv
	return sc
}

// Read reads like net.Conn's Read and records the sender of the bytes.
func (c *SenderConn) Read(b []byte) (int, error) {
	if c.raw == nil {
		return 0, syscall.EINVAL
	}
	if len(b) == 0 {
		return 0, nil
	}
	c.p, c.n, c.oobn, c.errno = b, 0, 0, nil
	err := c.raw.Read(c.recvFn)
	c.p = nil
	if err == nil {
		err = c.errno
	}
	if err != nil {
		return 0, &net.OpError{Op: "read", Net: "unix", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
	}
	if c.n == 0 {
		return 0, io.EOF
	}
	pid := -1
	if p, ok := credentialsPID(c.oob[:c.oobn]); ok {
		pid = p
	}
	switch {
	case c.sender == 0:
		c.sender = pid
	case c.sender != pid:
		c.mixed = true
	}
	return c.n, nil
}

// recv is one recvmsg into c.p and c.oob; it reports false when nothing
// is there yet (the runtime's poller waits, and calls it again).
func (c *SenderConn) recv(fd uintptr) bool {
	var iov unix.Iovec
	iov.Base = &c.p[0]
	iov.SetLen(len(c.p))
	var msg unix.Msghdr
	msg.Iov = &iov
	msg.SetIovlen(1)
	msg.Control = &c.oob[0]
	msg.SetControllen(len(c.oob))
	for {
		n, _, errno := unix.Syscall(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&msg)), unix.MSG_CMSG_CLOEXEC)
		switch errno {
		case 0:
			c.n, c.oobn = int(n), int(msg.Controllen)
			return true
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			if c.limit > 0 && !c.armed {
				// Nothing there yet: the wait begins, and its bound
				// with it (the poller has not waited on the read).
				c.armed = true
				c.UnixConn.SetReadDeadline(time.Now().Add(c.limit))
			}
			return false
		}
		c.errno = os.NewSyscallError("recvmsg", errno)
		return true
	}
}

// WaitAtMost bounds how long the reads that follow wait, in all, for
// bytes that have not come (os.ErrDeadlineExceeded), as a read deadline d
// from now would, except that the bound starts at the first wait: reads
// of what is there already arm no deadline, and so cost the runtime no
// timer (whose arming can wake the thread waiting in the poller). Unbound
// ends the bound.
func (c *SenderConn) WaitAtMost(d time.Duration) { c.limit, c.armed = d, false }

// Unbound lets the reads that follow wait as long as it takes.
func (c *SenderConn) Unbound() {
	if c.armed {
		c.UnixConn.SetReadDeadline(time.Time{})
	}
	c.limit, c.armed = 0, false
}

// credentialsPID returns the pid of the SCM_CREDENTIALS message in oob,
// if there is one.
func credentialsPID(oob []byte) (int, bool) {
	for len(oob) > 0 {
		h, data, rest, err := unix.ParseOneSocketControlMessage(oob)
		if err != nil {
			return 0, false
		}
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_CREDENTIALS && len(data) >= unix.SizeofUcred {
			return int(int32(binary.NativeEndian.Uint32(data))), true // struct ucred's pid
		}
		oob = rest
	}
	return 0, false
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
