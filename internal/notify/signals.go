package notify

// The connection's signals: sifted on its reader, the service's own
// handled in turn (see the package documentation).

import (
	"sync"
	"time"

	dbus "github.com/godbus/dbus/v5"
)

// ownerQueue bounds the service's signals waiting to be handled; more
// are dropped.
const ownerQueue = 64

// forgedLogEvery spaces the warnings about signals from other senders.
const forgedLogEvery = time.Minute

// A sieve is a connection's signal handler. It runs on the connection's
// reader, as each signal comes: it passes on to owned those of the
// service's owner, in order, and drops the others, and the owner's own
// when owned is full. It never waits.
type sieve struct {
	s     *Service
	mu    sync.Mutex
	ended bool
	owned chan *dbus.Signal // closed when the connection ends
}

func (v *sieve) DeliverSignal(_, _ string, sig *dbus.Signal) {
	if own := v.s.owner.Load(); own == nil || sig.Sender != *own {
		v.s.dropped(sig, "it did not come from the notification service")
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.ended {
		return
	}
	select {
	case v.owned <- sig:
	default:
		v.s.dropped(sig, "the notification service sent more than can be handled")
	}
}

// Terminate is called when the connection closes.
func (v *sieve) Terminate() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.ended {
		v.ended = true
		close(v.owned)
	}
}

// dropped logs a signal dropped, at most once in forgedLogEvery.
func (s *Service) dropped(sig *dbus.Signal, why string) {
	if sig.Name != iface+".ActionInvoked" {
		return
	}
	now := time.Now().UnixNano()
	last := s.forgedLogged.Load()
	if now-last < int64(forgedLogEvery) || !s.forgedLogged.CompareAndSwap(last, now) {
		return
	}
	s.log.Warn("notification action refused: "+why+" (others like it are dropped unlogged for a while)", "sender", sig.Sender)
}

// signals dispatches the service's signals until the connection ends.
func (s *Service) signals(conn *dbus.Conn, ch <-chan *dbus.Signal) {
	for sig := range ch {
		// A notification whose Notify call is under way may be the
		// one the signal is about: it is noted first.
		s.showing.Lock()
		s.showing.Unlock() //nolint:staticcheck // a barrier: empty on purpose
		switch sig.Name {
		case iface + ".ActionInvoked":
			var id uint32
			var key string
			if dbus.Store(sig.Body, &id, &key) != nil {
				continue
			}
			s.invoked(conn, sig.Sender, id, key)
		case iface + ".NotificationClosed":
			var id, reason uint32
			if dbus.Store(sig.Body, &id, &reason) != nil {
				continue
			}
			s.mu.Lock()
			if sh := s.shown[id]; sh != nil && sig.Sender == sh.owner {
				delete(s.shown, id)
				close(sh.closed)
			}
			s.mu.Unlock()
		}
	}
}

// invoked passes on an action if its signal comes from the service's
// owner, the one that showed the notification.
func (s *Service) invoked(conn *dbus.Conn, sender string, id uint32, key string) {
	s.mu.Lock()
	sh := s.shown[id]
	s.mu.Unlock()
	if sh == nil {
		return
	}
	now, err := owner(conn)
	if sender != sh.owner || err != nil || sender != now {
		s.log.Warn("notification action refused: it did not come from the notification service", "sender", sender, "owner", now, "shown_by", sh.owner, "notification", id)
		return
	}
	pid, err := pidOf(conn, sender)
	if err != nil {
		s.log.Warn("notification action refused: the bus does not say which process sent it", "sender", sender, "err", err)
		return
	}
	sh.onAction(Invoked{Action: key, Sender: sender, PID: pid})
}
