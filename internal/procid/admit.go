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
//
// A peer whose executable cannot be read (it is not dumpable, and this
// process has no right to trace it) is refused: nothing says what it
// runs. [Table.AdmitOpaque] admits it.
func (t *Table) Admit(c *net.UnixConn, socket string, log *slog.Logger) (*Peer, error) {
	return t.admit(c, nil, socket, log, false)
}

// AdmitCred is Admit for a connection whose credentials the caller read
// already with PeerCred: they are not read again.
func (t *Table) AdmitCred(c *net.UnixConn, cred Cred, socket string, log *slog.Logger) (*Peer, error) {
	return t.admit(c, &cred, socket, log, false)
}

// AdmitOpaque is Admit, but also admits a peer whose executable is
// hidden because it is not dumpable, as "postern approve" and "postern
// run" make themselves. The control socket uses it: its callers are
// identified by pid, start time, pidfd, uid, parents and session, and an
// answer counts by where its process lives, never by what it executes.
func (t *Table) AdmitOpaque(c *net.UnixConn, socket string, log *slog.Logger) (*Peer, error) {
	return t.admit(c, nil, socket, log, true)
}

// AdmitOpaqueCred is AdmitOpaque for credentials read already, as
// AdmitCred.
func (t *Table) AdmitOpaqueCred(c *net.UnixConn, cred Cred, socket string, log *slog.Logger) (*Peer, error) {
	return t.admit(c, &cred, socket, log, true)
}

// ownUID is this process's user, which it keeps for its life.
var ownUID = os.Getuid()

// OwnOrRoot reports whether uid is this process's user or root: the
// users whose processes the gateway deals with, on its sockets and on
// the upstream agent's.
func OwnOrRoot(uid uint32) bool { return int(uid) == ownUID || uid == 0 }

// ErrHiddenExe refuses a peer whose executable cannot be read.
var ErrHiddenExe = errors.New("its executable cannot be read: the process is not dumpable")

func (t *Table) admit(c *net.UnixConn, cred *Cred, socket string, log *slog.Logger, opaque bool) (*Peer, error) {
	peer, err := t.peerOf(c, cred)
	if err != nil {
		if hungUp(c) {
			// Closed already, as by a program that connects only to see
			// whether an agent is there (OpenSSH 10's sshd -i, which
			// then executes sshd-session): refused all the same, and
			// worth no warning.
			log.Info("refusing connection: closed before its peer could be identified", "socket", socket, "err", err)
		} else {
			log.Warn("refusing connection: cannot identify the peer", "socket", socket, "err", err)
		}
		return nil, fmt.Errorf("identify the peer: %w", err)
	}
	if peer.Exe.Hidden && !opaque {
		log.Warn("refusing connection: cannot identify the peer", "socket", socket, "pid", peer.PID, "err", ErrHiddenExe)
		peer.Close()
		return nil, fmt.Errorf("pid %d: %w", peer.PID, ErrHiddenExe)
	}
	if uid := peer.UID; !OwnOrRoot(uid) {
		log.Warn("refusing connection from another user", "socket", socket, "uid", uid, "pid", peer.PID, "exe", peer.Exe.Path)
		peer.Close()
		return nil, fmt.Errorf("pid %d, uid %d: %w", peer.PID, uid, ErrOtherUser)
	}
	return peer, nil
}
