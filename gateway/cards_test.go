package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os/exec"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/procid"
	"github.com/postern/postern/internal/procid/proctest"
)

// follower follows a gateway's cards over its control socket, as a
// console does, into a board; it can be made to hang up and follow
// again (a reconnection).
type follower struct {
	t      *testing.T
	c      *api.Client
	mu     sync.Mutex
	board  api.CardBoard
	more   bool // the change applied last goes on in the next delta
	deltas int
	err    error
	cancel context.CancelFunc
	done   chan struct{}
}

func (f *follower) start() {
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel, f.done = cancel, make(chan struct{})
	f.mu.Lock()
	f.board = api.CardBoard{} // what a console that starts over holds
	f.mu.Unlock()
	go func() {
		defer close(f.done)
		err := f.c.FollowCards(ctx, true, func(d *api.CardsDelta) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.deltas++
			f.more = d.More
			return f.board.Apply(d)
		})
		if err != nil {
			f.mu.Lock()
			f.err = err
			f.mu.Unlock()
		}
	}()
}

func (f *follower) stop() {
	f.cancel()
	<-f.done
}

// caughtUp waits until the board is at step seq, the change that brought
// it there whole, and returns its cards.
func (f *follower) caughtUp(seq uint64) []api.Card {
	f.t.Helper()
	// A generous bound: 450 cards of 150 KiB each, sent in parts under
	// the race detector on a slow 2-core machine, took over 30 s.
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(time.Millisecond) {
		f.mu.Lock()
		at, more, cards, err := f.board.Seq(), f.more, f.board.Cards(), f.err
		f.mu.Unlock()
		if err != nil {
			f.t.Fatalf("following the cards: %v", err)
		}
		if at == seq && !more {
			return cards
		}
		if at > seq || time.Now().After(deadline) {
			f.t.Fatalf("the follower is at step %d (more of it to come: %v), the engine at %d", at, more, seq)
		}
	}
}

// requester starts a process in a session of its own, outside the test's
// (so that the test process can be its approver), and pins it.
func requester(t *testing.T) *procid.Peer {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	proctest.WaitSleeping(t, cmd.Process.Pid, "sleep")
	p, err := procid.Host.Pin(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// A console following the gateway's cards over the control socket shows
// exactly the engine's pending cards after random requests, answers,
// expiries and cancellations, while it hangs up and follows again now
// and then in the middle of the stream.
func TestFollowedCardsMatchTheEngine(t *testing.T) {
	g, sock := startGateway(t)
	e := g.engine
	policy := func(timeout time.Duration) {
		p := *e.Policy()
		p.Mode, p.CardTimeout, p.Cooldown = audit.ModePerCall, timeout, 0
		e.SetPolicy(&p)
	}
	policy(time.Hour)
	c := api.NewClient(sock)
	// A console that stays, so that requests always have an approver
	// while the other one reconnects.
	stays := &follower{t: t, c: c}
	stays.start()
	defer stays.stop()
	f := &follower{t: t, c: c}
	f.start()
	defer func() { f.stop() }()
	_, seq := e.Cards()
	stays.caughtUp(seq)

	reqs := []*procid.Peer{requester(t), requester(t)}
	req := func(r *rand.Rand) *approvals.Request {
		return otherRequest(reqs[r.IntN(len(reqs))])
	}
	cancels := map[string]context.CancelFunc{}
	var wg sync.WaitGroup
	defer wg.Wait()
	pick := func(r *rand.Rand) string {
		cards, _ := e.Cards()
		if len(cards) == 0 {
			return ""
		}
		return cards[r.IntN(len(cards))].ID
	}
	gone := func(id string) bool {
		cards, _ := e.Cards()
		for _, c := range cards {
			if c.ID == id {
				return false
			}
		}
		return true
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, seed>>9))
	for i := range 300 {
		switch op := r.IntN(10); {
		case op < 4: // a request waits on a new card
			before := map[string]bool{}
			for _, c := range first(e.Cards()) {
				before[c.ID] = true
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			wg.Add(1)
			rq := req(r)
			go func() { defer wg.Done(); e.Decide(ctx, rq) }()
			for found := false; !found; time.Sleep(time.Millisecond) {
				for _, c := range first(e.Cards()) {
					if !before[c.ID] {
						cancels[c.ID], found = cancel, true
					}
				}
			}
		case op < 6: // an answer
			if id := pick(r); id != "" {
				if err := e.Answer(id, approvals.Answer{Verdict: approvals.VerdictDeny, Subject: -1, Approver: "test"}, nil); err != nil {
					t.Fatal(err)
				}
			}
		case op < 7: // a card nobody answers in time
			policy(time.Millisecond)
			if d := e.Decide(context.Background(), req(r)); d.Reason != audit.ReasonTimeout {
				t.Fatalf("a card that times out: %+v", d)
			}
			policy(time.Hour)
		case op < 8: // a requester that hangs up
			if id := pick(r); id != "" {
				cancels[id]()
				for !gone(id) {
					time.Sleep(time.Millisecond)
				}
			}
		case op < 9: // the console reconnects, mid-stream
			f.stop()
			f.start()
		}
		if r.IntN(4) == 0 {
			want, seq := e.Cards()
			if a, b := cardsJSON(f.caughtUp(seq)), cardsJSON(want); a != b {
				t.Fatalf("step %d: the console shows\n%s\nthe engine holds\n%s", i, a, b)
			}
		}
	}
	want, seq := e.Cards()
	if a, b := cardsJSON(f.caughtUp(seq)), cardsJSON(want); a != b {
		t.Fatalf("at the end: the console shows\n%s\nthe engine holds\n%s", a, b)
	}
	if a, b := cardsJSON(stays.caughtUp(seq)), cardsJSON(want); a != b {
		t.Fatalf("at the end: the console that stayed shows\n%s\nthe engine holds\n%s", a, b)
	}
	// The console that stayed was sent one snapshot, at the start; a
	// change each time after (a change that was sent and lost would have
	// failed its board's next Apply).
	stays.mu.Lock()
	deltas := stays.deltas
	stays.mu.Unlock()
	if deltas < 2 {
		t.Fatalf("the console that stayed took %d changes", deltas)
	}
}

func cardsJSON(cards []api.Card) string {
	b, _ := json.Marshal(cards)
	return string(b)
}

func first[A, B any](a A, _ B) A { return a }

// startPerCallGateway starts a gateway that asks about every request, on
// a card that waits an hour.
func startPerCallGateway(t *testing.T) (*Gateway, string) {
	t.Helper()
	g, sock := startGateway(t)
	p := *g.engine.Policy()
	p.Mode, p.CardTimeout = audit.ModePerCall, time.Hour
	g.engine.SetPolicy(&p)
	return g, sock
}

// otherRequest is a request of requester through the main socket, for
// data the agent cannot interpret.
func otherRequest(requester *procid.Peer) *approvals.Request {
	return &approvals.Request{Requester: requester, Channel: approvals.Channel{Kind: approvals.ChannelAgent},
		Key: approvals.Key{Fingerprint: "SHA256:k"}, Purpose: approvals.PurposeOther}
}

// A follower is sent one snapshot, then only the changes: the card
// added, the id of the card gone.
func TestFollowCardsSendsTheChanges(t *testing.T) {
	g, sock := startPerCallGateway(t)
	e := g.engine
	c := api.NewClient(sock)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	deltas := make(chan *api.CardsDelta, 16)
	done := make(chan error, 1)
	go func() {
		done <- c.FollowCards(ctx, true, func(d *api.CardsDelta) error { deltas <- d; return nil })
	}()
	next := func() *api.CardsDelta {
		t.Helper()
		select {
		case d := <-deltas:
			return d
		case err := <-done:
			t.Fatalf("the stream ended: %v", err)
		case <-time.After(30 * time.Second):
			t.Fatal("no change")
		}
		return nil
	}
	if d := next(); !d.Reset || len(d.Cards) != 0 {
		t.Fatalf("first: %+v", d)
	}
	rq := otherRequest(requester(t))
	decided := make(chan approvals.Decision, 1)
	go func() { decided <- e.Decide(ctx, rq) }()
	added := next()
	if added.Reset || len(added.Cards) != 1 || len(added.Gone) != 0 {
		t.Fatalf("a card shown: %+v", added)
	}
	if _, err := c.Answer(ctx, added.Cards[0].ID, api.VerdictDeny, -1); err != nil {
		t.Fatal(err)
	}
	if d := next(); d.Reset || len(d.Cards) != 0 || len(d.Gone) != 1 || d.Gone[0] != added.Cards[0].ID || d.Since != added.Seq {
		t.Fatalf("a card answered: %+v", d)
	}
	if d := <-decided; d.Allow {
		t.Fatalf("allowed after a deny: %+v", d)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("the follower hung up: %v", err)
	}
}

// A follower that waits through quiet periods (the gateway checks each
// time that it is still the process that asked) goes on following: the
// change after them reaches it.
func TestFollowCardsThroughQuietPeriods(t *testing.T) {
	// Put back after the gateway stopped (cleanups run last first).
	was := recheckFollower
	t.Cleanup(func() { recheckFollower = was })
	recheckFollower = 20 * time.Millisecond
	g, sock := startPerCallGateway(t)
	e := g.engine
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	deltas := make(chan *api.CardsDelta, 16)
	done := make(chan error, 1)
	go func() {
		done <- api.NewClient(sock).FollowCards(ctx, true, func(d *api.CardsDelta) error { deltas <- d; return nil })
	}()
	<-deltas // the snapshot
	time.Sleep(10 * recheckFollower)
	rq := otherRequest(requester(t))
	go e.Decide(ctx, rq)
	select {
	case d := <-deltas:
		if len(d.Cards) != 1 {
			t.Fatalf("the change after the quiet periods: %+v", d)
		}
	case err := <-done:
		t.Fatalf("the stream ended: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("no change after the quiet periods")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("the follower hung up: %v", err)
	}
}

// Nothing that serves the control socket outlives the gateway: a client
// that connected and sent nothing yet, and one that follows the cards,
// are cut when it stops, and their handlers have ended (their slots given
// back) when Run returns, not up to a request timeout later.
func TestStopWaitsForControlConnections(t *testing.T) {
	g, sock, stop := runGateway(t, gatewayHome(t))
	silent, err := net.Dial("unix", api.ControlSocket(sock))
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	following := followAsConsole(sock)
	for g.limits.control.Total() != 2 {
		time.Sleep(time.Millisecond) // the silent one is admitted
	}
	start := time.Now()
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(3 * time.Second):
		var stacks strings.Builder
		pprof.Lookup("goroutine").WriteTo(&stacks, 2)
		t.Logf("still stopping after 3s:\n%s", stacks.String())
		<-stopped
	}
	if n := g.limits.control.Total(); n != 0 {
		t.Fatalf("%d control connections still served after the gateway stopped", n)
	}
	// How long stopping took is logged, not judged: once, in make race
	// under load, it took 10 s, and the stacks above (-v) say where.
	t.Logf("stopping took %v", time.Since(start))
	<-following
	silent.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := silent.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("the silent connection: %v, want it closed", err)
	}
}

// followAsConsole follows the cards of the gateway at sock as a console,
// until the gateway ends the stream; it returns once the snapshot came,
// and the stream's end comes on the channel.
func followAsConsole(sock string) <-chan error {
	following := make(chan error, 1)
	open := make(chan struct{})
	var once sync.Once
	go func() {
		following <- api.NewClient(sock).FollowCards(context.Background(), true, func(*api.CardsDelta) error {
			once.Do(func() { close(open) })
			return nil
		})
	}()
	select {
	case <-open:
	case err := <-following:
		following <- err
	}
	return following
}

// A console whose stream the gateway ends (it stops) is told so.
func TestFollowCardsEndsWithTheGateway(t *testing.T) {
	_, sock, stop := runGateway(t, gatewayHome(t))
	following := followAsConsole(sock)
	stop()
	if err := <-following; err == nil || errors.Is(err, context.Canceled) {
		t.Fatalf("the stream ended with %v", err)
	}
}
