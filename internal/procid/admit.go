package procid

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
)

// ErrOtherUser reports a peer that runs as neither the gateway's user nor
// root.
var ErrOtherUser = errors.New("peer runs as another user")

// Admit is the admission check of every socket the gateway serves (the
// agent sockets, the control socket, the bastion's socket), and the only
// one: it identifies the process at the other end of c from kernel
// evidence (PeerOf: SO_PEERCRED and a pidfd on Linux, LOCAL_PEERCRED on
// macOS), pins it, and admits it only if it runs as this process's user
// or as root (as ssh-agent does). The socket's permissions are the first
// fence; this check holds even when they were opened.
//
// A refused or unidentifiable peer is logged on log, with socket naming
// the socket, and Admit returns an error (ErrOtherUser for another user);
// the caller then closes the connection without answering. An admitted
// peer is for the caller to Close, and to Verify again before acting on
// each request.
func (t *Table) Admit(c *net.UnixConn, socket string, log *slog.Logger) (*Peer, error) {
	peer, err := t.PeerOf(c)
	if err != nil {
		log.Warn("refusing connection: cannot identify the peer", "socket", socket, "err", err)
		return nil, fmt.Errorf("identify the peer: %w", err)
	}
	if uid := peer.UID; int(uid) != os.Getuid() && uid != 0 {
		log.Warn("refusing connection from another user", "socket", socket, "uid", uid, "pid", peer.PID, "exe", peer.Exe.Path)
		peer.Close()
		return nil, fmt.Errorf("pid %d, uid %d: %w", peer.PID, uid, ErrOtherUser)
	}
	return peer, nil
}
