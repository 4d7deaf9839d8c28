package procid

import (
	"net"

	"golang.org/x/sys/unix"
)

// hungUp reports whether the peer of c has closed its end with nothing
// left to read: a connection nobody will use, whatever its process was.
func hungUp(c *net.UnixConn) bool {
	raw, err := c.SyscallConn()
	if err != nil {
		return false
	}
	closed := false
	raw.Control(func(fd uintptr) {
		p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN | unix.POLLRDHUP}}
		if n, err := unix.Poll(p, 0); err != nil || n != 1 || p[0].Revents&(unix.POLLRDHUP|unix.POLLHUP) == 0 {
			return
		}
		queued, err := unix.IoctlGetInt(int(fd), unix.SIOCINQ)
		closed = err == nil && queued == 0
	})
	return closed
}
