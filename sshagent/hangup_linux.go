package sshagent

import "golang.org/x/sys/unix"

// clientEnd looks at the client's end of the connection fd without
// reading from it. Linux reports the client's close (or shutdown of its
// writing) apart from the bytes it sent before it: so a client that sent
// the start of a next request while its card was up, and then hung up,
// is found too.
func clientEnd(fd int) endState {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
	for {
		_, err := unix.Poll(fds, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return endUnknown
		}
		break
	}
	switch r := fds[0].Revents; {
	case r&(unix.POLLRDHUP|unix.POLLHUP) != 0:
		return endClosed
	case r&(unix.POLLERR|unix.POLLNVAL) != 0:
		return endUnknown
	}
	return endOpen
}
