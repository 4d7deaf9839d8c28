package gateway

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
	"github.com/postern/postern/gateway/api"
)

// However large the pending cards are together, a console that follows
// them is sent them all: a program that added a key with a long comment
// (up to 160 KiB) and asks with it from hundreds of processes puts up
// more than a control line holds (64 MiB), and the consoles, sent them
// in one line, could read none of them again, nor any card after; nor
// could postern approve --list list them.
func TestFollowedCardsReachAConsoleHoweverLargeTogether(t *testing.T) {
	g, sock := startGateway(t)
	e := g.engine
	p := *e.Policy()
	p.Mode, p.CardTimeout, p.Cooldown = audit.ModePerCall, time.Hour, 0
	e.SetPolicy(&p)
	// A console attached while the cards come, one change at a time.
	stays := &follower{t: t, c: api.NewClient(sock)}
	stays.start()
	defer stays.stop()
	_, at := e.Cards()
	stays.caughtUp(at)
	rq := requester(t)
	comment := strings.Repeat("c", 150<<10)
	const n = 450
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.Decide(ctx, &approvals.Request{Requester: rq, Channel: approvals.Channel{Kind: approvals.ChannelAgent},
				Key: approvals.Key{Fingerprint: "SHA256:k", Comment: comment}, Purpose: approvals.PurposeOther})
		}()
	}
	for deadline := time.Now().Add(60 * time.Second); len(first(e.Cards())) < n; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d cards of %d came up", len(first(e.Cards())), n)
		}
	}
	_, seq := e.Cards()
	f := &follower{t: t, c: api.NewClient(sock)}
	f.start()
	defer f.stop()
	if got := len(f.caughtUp(seq)); got != n {
		t.Fatalf("the console holds %d cards of %d", got, n)
	}
	// So are postern approve --list and postern approve ID, which read
	// them once.
	res, err := api.NewClient(sock).Cards(context.Background())
	if err != nil || len(res.Cards) != n || res.Version != seq {
		t.Fatalf("the pending cards read once: %v (%d cards of %d)", err, len(res.Cards), n)
	}
}
