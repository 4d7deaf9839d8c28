package gateway

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/postern/postern/internal/vault"
)

// guessLanes paces wrong passphrases, in two lanes: the person's
// (postern unlock from outside every run) and every other caller's
// (ssh-add -X, which any client of the agent socket can send, and an
// unlock or vault change asked for from inside a run). An attempt waits
// its lane's turn and, when wrong, holds its lane through a delay that
// grows with the lane's failures (vault.WrongPassphraseDelay), so that
// within a lane the delays add up; the right passphrase, in either lane,
// ends the delays of both. A program guessing through the agent socket
// so slows its own guesses, never the person's unlock, which waits at
// most for the one attempt under way to finish its key derivation.
type guessLanes struct {
	person, other guessLane
	// sleep waits out a delay; nil is time.Sleep.
	sleep func(time.Duration)
}

type guessLane struct {
	mu       sync.Mutex // held by the lane's attempt, through its delay
	failures atomic.Int64
}

// lane returns the person's lane or the other callers'.
func (g *guessLanes) lane(person bool) *guessLane {
	if person {
		return &g.person
	}
	return &g.other
}

// try runs attempt in its lane's turn, and, if it reports a wrong
// passphrase, counts the failure and waits its delay before returning.
// An attempt whose caller is gone (ctx ended: it hung up, or its time
// limit passed) when its turn comes is not made: the caller was told
// that it got no answer, and an unlock or a change it no longer waits
// for must not happen behind its back.
func (g *guessLanes) try(ctx context.Context, person bool, attempt func() error) error {
	l := g.lane(person)
	l.mu.Lock()
	defer l.mu.Unlock()
	if ctx.Err() != nil {
		return fmt.Errorf("the caller left before its turn came, so nothing was tried: %w", context.Cause(ctx))
	}
	err := attempt()
	if errors.Is(err, vault.ErrWrongPassphrase) {
		d := vault.WrongPassphraseDelay(int(min(l.failures.Add(1), 1<<20)))
		if g.sleep != nil {
			g.sleep(d)
		} else {
			time.Sleep(d)
		}
	}
	return err
}

// reset ends the delays of both lanes: the right passphrase was given.
func (g *guessLanes) reset() {
	g.person.failures.Store(0)
	g.other.failures.Store(0)
}

// failures returns the failures counted in both lanes.
func (g *guessLanes) failures() int64 {
	return g.person.failures.Load() + g.other.failures.Load()
}
