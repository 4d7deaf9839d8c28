package main

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/safetext"
)

// reconnectEvery is how often a console tries again to reach a gateway
// that went away.
const reconnectEvery = 250 * time.Millisecond

// cardWatcher follows the gateway's pending cards for a console: it keeps
// a copy of them up to date from the changes the gateway sends (a
// snapshot first, then only what changed), rides out a gateway that stops
// and comes back, saying so, and starts over from a snapshot after a
// change it missed. Each call to next waits for a change and returns
// every card; changes instead hands on each change, from the goroutine
// that reads them.
type cardWatcher struct {
	c *api.Client
	// say reports a change of connection to the person (through tell,
	// which escapes it).
	say func(msg string)

	start   sync.Once
	changed chan struct{} // a change not yet taken by next
	failed  chan any      // a panic of the goroutine next started
	mu      sync.Mutex
	board   api.CardBoard

	boot string // of the gateway followed; follow's own
	lost bool
}

// next returns the pending cards once they changed since the last call
// (the first call: once they are known). While the gateway cannot be
// reached it keeps trying, and reports the loss once and the return (with
// a restart, when the boot id changed). A panic in the goroutine that
// reads the gateway is raised again in next's caller, which can restore
// the terminal.
func (w *cardWatcher) next(ctx context.Context) ([]api.Card, error) {
	w.start.Do(func() {
		w.changed, w.failed = make(chan struct{}, 1), make(chan any, 1)
		go func() {
			defer func() {
				if r := recover(); r != nil {
					w.failed <- r
				}
			}()
			w.follow(context.WithoutCancel(ctx), func(*api.CardsDelta) {
				select {
				case w.changed <- struct{}{}:
				default:
				}
			})
		}()
	})
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-w.failed:
		panic(r)
	case <-w.changed:
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.board.Cards(), nil
}

// pending reports whether card id is pending, as far as the changes
// applied so far tell: a card next returned may have gone since.
func (w *cardWatcher) pending(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.board.Has(id)
}

// changes calls show with each change of the pending cards once it is
// applied (a snapshot first, and again after a change was missed or the
// gateway came back), until ctx ends, in the goroutine that reads the
// changes: a card reaches show without a hand-over to another goroutine,
// which the Go scheduler may give to another thread that must first be
// woken (median 140 µs, at load 10, between a change read and the
// goroutine that waited in next), and without a copy of every pending
// card. While show waits (its output is blocked), the changes wait in the
// gateway's socket, and those that pile up there come as one.
func (w *cardWatcher) changes(ctx context.Context, show func(d *api.CardsDelta)) {
	w.follow(ctx, show)
}

// follow applies the gateway's changes to the board, and calls changed
// with each after it is applied, following the gateway again whenever
// its stream ends, until ctx ends.
func (w *cardWatcher) follow(ctx context.Context, changed func(d *api.CardsDelta)) {
	for ctx.Err() == nil {
		var whole *api.CardsDelta // a change sent in parts, so far
		err := w.c.FollowCards(ctx, true, func(d *api.CardsDelta) error {
			if d.Reset && (w.lost || w.boot == "") {
				w.reconnected(ctx)
			}
			w.mu.Lock()
			err := w.board.Apply(d)
			w.mu.Unlock()
			if err != nil {
				return err
			}
			if d, whole = joinParts(whole, d); d != nil {
				changed(d)
			}
			return nil
		})
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, api.ErrCardsGap):
			w.tell("postern: " + err.Error() + "; reading them all again")
			continue
		case !w.lost:
			w.lost = true
			w.tell("postern: the gateway cannot be reached (" + err.Error() + "); reconnecting")
		}
		select {
		case <-ctx.Done():
		case <-time.After(reconnectEvery):
		}
	}
}

// tell says msg, about the connection to the gateway, to the person:
// it holds the gateway's words (an error, a boot id), which are escaped
// (safetext.Terminal) whatever answers on the control socket.
func (w *cardWatcher) tell(msg string) { w.say(safetext.Terminal(msg)) }

// reconnected notes the gateway's boot id and says whether it restarted.
func (w *cardWatcher) reconnected(ctx context.Context) {
	st, err := w.c.Status(ctx)
	if err != nil {
		return
	}
	switch {
	case w.boot == "":
	case st.BootID != w.boot:
		w.tell("postern: reconnected: the gateway restarted (boot id " + st.BootID + "); every earlier approval and card is gone")
	default:
		w.tell("postern: reconnected to the gateway")
	}
	w.boot, w.lost = st.BootID, false
}

// joinParts adds d, a change or a part of one, to whole, the parts of a
// change come so far (nil: none), and returns the change once it is
// whole, else the parts so far. A change in parts is handed on whole:
// a snapshot's first part alone would read as if the cards in the
// others had gone.
func joinParts(whole, d *api.CardsDelta) (done, parts *api.CardsDelta) {
	if whole != nil {
		whole.Seq, whole.More = d.Seq, d.More
		whole.Cards, whole.Gone = append(whole.Cards, d.Cards...), append(whole.Gone, d.Gone...)
		d = whole
	}
	if d.More {
		return nil, d
	}
	return d, nil
}
