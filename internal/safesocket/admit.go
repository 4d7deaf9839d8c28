package safesocket

import (
	"context"
	"errors"
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
// peer's credentials alone, before identifying the process opens
// descriptors for it (procid.Table.AdmitCred, which takes the same
// credentials, recorded once at connect, and also refuses other users). When
// identifying fails for want of descriptors, exhausted (when not nil)
// sheds an idle connection and the peer is identified again, a few times,
// so that a new client gets in even while a flood takes every descriptor
// the others free; the refusal is logged once, not at each try. On error
// nothing is held; the caller closes c. The caller releases the slot and
// closes the peer.
func Admit(c *net.UnixConn, procs *procid.Table, socket string, log *slog.Logger, limits *connlimit.Limiter, exhausted func(error)) (*procid.Peer, *connlimit.Slot, error) {
	return admit(c, procs.Admit, procs.AdmitCred, socket, log, limits, exhausted)
}

// AdmitOpaque is Admit for the control socket: it also admits a peer that
// is not dumpable (procid.Table.AdmitOpaque), as postern approve and
// postern run make themselves.
func AdmitOpaque(c *net.UnixConn, procs *procid.Table, socket string, log *slog.Logger, limits *connlimit.Limiter, exhausted func(error)) (*procid.Peer, *connlimit.Slot, error) {
	return admit(c, procs.AdmitOpaque, procs.AdmitOpaqueCred, socket, log, limits, exhausted)
}

// identifier identifies a connection's peer (procid.Table.Admit or
// AdmitOpaque); credentialed does it with the credentials read already
// (AdmitCred, AdmitOpaqueCred).
type (
	identifier   func(*net.UnixConn, string, *slog.Logger) (*procid.Peer, error)
	credentialed func(*net.UnixConn, procid.Cred, string, *slog.Logger) (*procid.Peer, error)
)

func admit(c *net.UnixConn, plain identifier, withCred credentialed, socket string, log *slog.Logger, limits *connlimit.Limiter, exhausted func(error)) (*procid.Peer, *connlimit.Slot, error) {
	var slot *connlimit.Slot
	identify := plain
	if limits != nil {
		cred, err := procid.PeerCred(c)
		if err != nil {
			log.Warn("refusing connection: cannot read the peer's credentials", "socket", socket, "err", err)
			return nil, nil, err
		}
		if slot, err = limits.Take(cred.UID, c); err != nil {
			log.Warn("refusing connection", "socket", socket, "uid", cred.UID, "err", err)
			return nil, nil, fmt.Errorf("uid %d: %w", cred.UID, err)
		}
		// The credentials were recorded at connect: they are the same when
		// read again, and are not.
		identify = func(c *net.UnixConn, socket string, log *slog.Logger) (*procid.Peer, error) {
			return withCred(c, cred, socket, log)
		}
	}
	if slot != nil {
		defer slot.Busy()() // not pushed out while it is identified
	}
	peer, err := identify(c, socket, log)
	// The first failure for want of descriptors is logged; the same
	// failure again is not (exhausted logs the shortage, paced).
	again := slog.New(quietShort{log.Handler()})
	for try := 1; err != nil && Exhausted(err) && exhausted != nil && try <= admitRetries; try++ {
		exhausted(err)
		time.Sleep(time.Duration(try) * 5 * time.Millisecond)
		peer, err = identify(c, socket, again)
	}
	if err != nil {
		if slot != nil {
			slot.Release()
		}
		return nil, nil, err
	}
	return peer, slot, nil
}

// quietShort drops the records whose error is a want of descriptors or
// memory, and passes on the others.
type quietShort struct{ h slog.Handler }

func (q quietShort) Enabled(ctx context.Context, l slog.Level) bool { return q.h.Enabled(ctx, l) }

func (q quietShort) Handle(ctx context.Context, r slog.Record) error {
	short := false
	r.Attrs(func(a slog.Attr) bool {
		if err, ok := a.Value.Any().(error); ok && (procid.Short(err) || errors.Is(err, procid.ErrNoResources)) {
			short = true
		}
		return !short
	})
	if short {
		return nil
	}
	return q.h.Handle(ctx, r)
}

func (q quietShort) WithAttrs(as []slog.Attr) slog.Handler { return quietShort{q.h.WithAttrs(as)} }
func (q quietShort) WithGroup(name string) slog.Handler    { return quietShort{q.h.WithGroup(name)} }
