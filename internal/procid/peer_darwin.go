package procid

import (
	"errors"
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// PeerOf identifies the process at the other end of c from
// LOCAL_PEERCRED and LOCAL_PEERPID, pinned by its start time.
func (t *Table) PeerOf(c *net.UnixConn) (*Peer, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var (
		cred *unix.Xucred
		pid  int
		cerr error
	)
	err = raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptXucred(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
		if cerr == nil {
			pid, cerr = unix.GetsockoptInt(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERPID)
		}
	})
	if err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("reading peer credentials: %w", err)
	}
	if pid <= 0 {
		return nil, errors.New("peer credentials carry no pid")
	}
	return t.finish(pid, cred.Uid, true, startPin{})
}

func pinPID(int) (pin, error) { return startPin{}, nil }

// shareable reports whether pn holds descriptors worth sharing: none do
// here.
func shareable(pin) bool { return false }

// PeerUID returns the uid of the process at the other end of c from
// LOCAL_PEERCRED alone: it opens no descriptor, so that a server can
// count the connection against its user before it identifies the process
// (PeerOf).
func PeerUID(c *net.UnixConn) (uint32, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var (
		cred *unix.Xucred
		cerr error
	)
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptXucred(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if cerr != nil {
		return 0, fmt.Errorf("reading peer credentials: %w", cerr)
	}
	return cred.Uid, nil
}

// uniquePidfsInodes: there are no pidfds here.
func uniquePidfsInodes() bool { return false }
