package procid

import (
	"errors"
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// PeerOf identifies the process at the other end of c from
// LOCAL_PEERCRED and LOCAL_PEERPID, pinned by its start time.
func (t *Table) PeerOf(c *net.UnixConn) (*Peer, error) { return t.peerOf(c, nil) }

// peerOf is PeerOf; the credentials are read unless known is given.
func (t *Table) peerOf(c *net.UnixConn, known *Cred) (*Peer, error) {
	cred := Cred{}
	if known != nil {
		cred = *known
	} else {
		var err error
		if cred, err = PeerCred(c); err != nil {
			return nil, err
		}
	}
	if cred.PID <= 0 {
		return nil, errors.New("peer credentials carry no pid")
	}
	return t.finish(cred.PID, cred.UID, true, startPin{})
}

func pinPID(int) (pin, error) { return startPin{}, nil }

// shareable reports whether pn holds descriptors worth sharing: none do
// here.
func shareable(pin) bool { return false }

// PeerCred returns the credentials of the process at the other end of c
// from LOCAL_PEERCRED and LOCAL_PEERPID: it opens no descriptor, so that
// a server can count the connection against its user before it
// identifies the process ([Table.AdmitCred], which does not read them
// again).
func PeerCred(c *net.UnixConn) (Cred, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return Cred{}, err
	}
	var (
		xu   *unix.Xucred
		pid  int
		cerr error
	)
	if err := raw.Control(func(fd uintptr) {
		xu, cerr = unix.GetsockoptXucred(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
		if cerr == nil {
			pid, cerr = unix.GetsockoptInt(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERPID)
		}
	}); err != nil {
		return Cred{}, err
	}
	if cerr != nil {
		return Cred{}, fmt.Errorf("reading peer credentials: %w", cerr)
	}
	return Cred{PID: pid, UID: xu.Uid}, nil
}

// uniquePidfsInodes: there are no pidfds here.
func uniquePidfsInodes() bool { return false }
