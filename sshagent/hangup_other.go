//go:build !linux

package sshagent

import "golang.org/x/sys/unix"

// clientEnd looks at the client's end of the connection fd without
// reading from it. Here a close is seen only while nothing the client
// sent before it waits to be read: the first byte of a next request ends
// the watch (endUnknown), and a hang-up after it is found when the card
// times out.
func clientEnd(fd int) endState {
	var b [1]byte
	n, _, err := unix.Recvfrom(fd, b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
	switch {
	case err == unix.EAGAIN:
		return endOpen
	case n == 0 && err == nil:
		return endClosed
	}
	return endUnknown
}
