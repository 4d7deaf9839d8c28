package safesocket

import (
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/postern/postern/internal/connlimit"
	"github.com/postern/postern/internal/procid"
)

// admitRetries bounds the identifications Admit tries again after
// shedding an idle connection.
const admitRetries = 5

// Admit is how every gateway socket takes a client in. It counts the
// connection against its user's bound first (limits, when not nil; at the
// bound the user's connection idle the longest makes room), from the
// peer's uid alone, before identifying the process opens descriptors for
// it (procid.Table.Admit, which also refuses other users). When
// identifying fails for want of descriptors, exhausted (when not nil)
// sheds an idle connection and the peer is identified again, a few times,
// so that a new client gets in even while a flood takes every descriptor
// the others free. On error
// nothing is held; the caller closes c. The caller releases the slot and
// closes the peer.
func Admit(c *net.UnixConn, procs *procid.Table, socket string, log *slog.Logger, limits *connlimit.Limiter, exhausted func(error)) (*procid.Peer, *connlimit.Slot, error) {
	return admit(c, procs.Admit, socket, log, limits, exhausted)
}

// AdmitOpaque is Admit for the control socket: it also admits a peer that
// is not dumpable (procid.Table.AdmitOpaque), as postern approve and
// postern run make themselves.
func AdmitOpaque(c *net.UnixConn, procs *procid.Table, socket string, log *slog.Logger, limits *connlimit.Limiter, exhausted func(error)) (*procid.Peer, *connlimit.Slot, error) {
	return admit(c, procs.AdmitOpaque, socket, log, limits, exhausted)
}

func admit(c *net.UnixConn, identify func(*net.UnixConn, string, *slog.Logger) (*procid.Peer, error), socket string, log *slog.Logger, limits *connlimit.Limiter, exhausted func(error)) (*procid.Peer, *connlimit.Slot, error) {
	var slot *connlimit.Slot
	if limits != nil {
		uid, err := procid.PeerUID(c)
		if err != nil {
			log.Warn("refusing connection: cannot read the peer's credentials", "socket", socket, "err", err)
			return nil, nil, err
		}
		if slot, err = limits.Take(uid, c); err != nil {
			log.Warn("refusing connection", "socket", socket, "uid", uid, "err", err)
			return nil, nil, fmt.Errorf("uid %d: %w", uid, err)
		}
	}
	if slot != nil {
		defer slot.Busy()() // not pushed out while it is identified
	}
	peer, err := identify(c, socket, log)
	for try := 1; err != nil && Exhausted(err) && exhausted != nil && try <= admitRetries; try++ {
		exhausted(err)
		time.Sleep(time.Duration(try) * 5 * time.Millisecond)
		peer, err = identify(c, socket, log)
	}
	if err != nil {
		if slot != nil {
			slot.Release()
		}
		return nil, nil, err
	}
	return peer, slot, nil
}
