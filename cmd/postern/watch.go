package main

import (
	"context"
	"time"

	"github.com/postern/postern/gateway/api"
)

// reconnectEvery is how often a console tries again to reach a gateway
// that went away.
const reconnectEvery = 250 * time.Millisecond

// cardWatcher follows the gateway's pending cards for a console: each
// call to next waits for a change, and rides out a gateway that stops
// and comes back, saying so.
type cardWatcher struct {
	c       *api.Client
	version uint64
	boot    string
	lost    bool
	// say reports a change of connection to the person.
	say func(msg string)
}

// next returns the pending cards once they changed. While the gateway
// cannot be reached it keeps trying, and reports the loss once and the
// return (with a restart, when the boot id changed).
func (w *cardWatcher) next(ctx context.Context) ([]api.Card, error) {
	for {
		res, err := w.c.WatchCards(ctx, w.version)
		if err == nil {
			if w.lost || w.boot == "" {
				w.reconnected(ctx)
			}
			w.version = res.Version
			return res.Cards, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !w.lost {
			w.lost = true
			w.say("postern: the gateway cannot be reached (" + err.Error() + "); reconnecting")
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(reconnectEvery):
		}
	}
}

// reconnected notes the gateway's boot id and says whether it restarted.
func (w *cardWatcher) reconnected(ctx context.Context) {
	st, err := w.c.Status(ctx)
	if err != nil {
		return
	}
	switch {
	case w.boot == "":
	case st.BootID != w.boot:
		w.say("postern: reconnected: the gateway restarted (boot id " + st.BootID[:8] + "…); every earlier approval and card is gone")
		w.version = 0
	default:
		w.say("postern: reconnected to the gateway")
	}
	w.boot, w.lost = st.BootID, false
}
