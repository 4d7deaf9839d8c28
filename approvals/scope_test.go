package approvals

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/procid"
)

func (w *world) authTo(pid int, k ssh.PublicKey) *Request {
	r := w.req(pid)
	r.Purpose = PurposeAuth
	if k != nil {
		r.Dest = &Destination{HostKey: k}
	}
	return r
}

func (w *world) sshsig(pid int) *Request {
	r := w.req(pid)
	r.Purpose, r.Namespace = PurposeSSHSig, "git"
	return r
}

// With session_scope = "destination", a grant covers the destination it
// was approved for and nothing else; one approved for a commit signature
// (no destination) covers no login at all.
func TestDestinationScopedGrantsAreExact(t *testing.T) {
	w := newWorld(t)
	p := *w.e.Policy()
	p.Scope = ScopeDestination
	w.e.SetPolicy(&p)
	one, two := hostKey(t), hostKey(t)

	// A session for a signature.
	w.signatureSession()
	// It does not cover a login.
	ch := w.decide(w.authTo(13, one))
	c := w.card()
	if c.Mode != audit.ModeSession || !strings.Contains(c.Covers, "only") {
		t.Fatalf("login card: %+v", c)
	}
	w.answer(c.ID, VerdictSession, 30)
	if d := got(t, ch); d.Reason != audit.ReasonApprovedSession {
		t.Fatalf("login: %+v", d)
	}
	if d := w.e.Decide(context.Background(), w.authTo(13, one)); d.Reason != audit.ReasonSession {
		t.Fatalf("the approved destination again: %+v", d)
	}
	// Another destination is asked about.
	ch = w.decide(w.authTo(13, two))
	if c := w.card(); c.Destination == nil || c.Destination.Fingerprint != ssh.FingerprintSHA256(two) {
		t.Fatalf("another destination's card: %+v", c)
	}
	w.answer(w.card().ID, VerdictDeny, 30)
	if d := got(t, ch); d.Allow {
		t.Fatal("a grant covered a destination it was not approved for")
	}
	// A login whose destination was not verified has nothing to bind a
	// session to: asked every time.
	ch = w.decide(w.authTo(13, nil))
	if c := w.card(); c.Mode != audit.ModePerCall {
		t.Fatalf("unverified login's card: %+v", c)
	}
	w.answer(w.card().ID, VerdictDeny, 30)
	if d := got(t, ch); d.Allow {
		t.Fatal("a scoped grant covered a login with no verified destination")
	}
	// A tightening applies to grants approved under the key scope too.
	p.Scope = ScopeKey
	w.e.SetPolicy(&p)
	w.e.RevokeAll()
	ch = w.decide(w.sshsig(13))
	// The card for a signature says that logins ride its session too.
	if c := w.card(); !strings.Contains(c.Covers, "any use: logins to hosts no rule asks about every time, and signatures in any namespace") {
		t.Fatalf("a key-scoped card for a signature says it covers %q", c.Covers)
	}
	w.answer(w.card().ID, VerdictSession, 30)
	got(t, ch)
	if d := w.e.Decide(context.Background(), w.authTo(13, one)); d.Reason != audit.ReasonSession {
		t.Fatalf("key scope: %+v", d)
	}
	p.Scope = ScopeDestination
	w.e.SetPolicy(&p)
	ch = w.decide(w.authTo(13, one))
	w.answer(w.card().ID, VerdictDeny, 30)
	if d := got(t, ch); d.Allow {
		t.Fatal("a key-scoped grant covered a login after the scope was narrowed")
	}
}

// Requests that ask the same session question wait on one card. A "once"
// answer approves the request the card was shown for, and only it: the
// others are asked again.
func TestOnceAnswersExactlyOneRequest(t *testing.T) {
	w := newWorld(t)
	const n = 8
	first := w.decide(w.req(13))
	c := w.card()
	var rest []<-chan Decision
	for i := 1; i < n; i++ {
		rest = append(rest, w.decide(w.req(13)))
	}
	waitJoined(t, w, n-1)
	w.answer(c.ID, VerdictOnce, 30)
	if d := got(t, first); !d.Allow || d.Reason != audit.ReasonApprovedOnce || d.Card != c.ID {
		t.Fatalf("the card's own request: %+v", d)
	}
	// The others are asked again, on a new card of their own.
	c2 := w.card()
	if c2.ID == c.ID {
		t.Fatal("the answered card is still pending")
	}
	// Every other request asks again: one shows the card, the rest join it.
	// Answering before they all have would leave a latecomer a card of its
	// own that nobody answers.
	waitJoined(t, w, n-2)
	w.answer(c2.ID, VerdictDeny, 30)
	allowed := 1
	for _, ch := range rest {
		if got(t, ch).Allow {
			allowed++
		}
	}
	if allowed != 1 {
		t.Fatalf("one once answer signed %d of %d requests", allowed, n)
	}
	// A session answer covers the joined requests through the grant it made.
	w.f.Set(14, 12, 140, w.f.Exe("ssh", "ssh"))
	first = w.decide(w.req(13))
	c = w.card()
	second := w.decide(w.req(14))
	waitJoined(t, w, 1)
	w.answer(c.ID, VerdictSession, 30)
	if d := got(t, first); d.Reason != audit.ReasonApprovedSession {
		t.Fatalf("first: %+v", d)
	}
	if d := got(t, second); d.Reason != audit.ReasonSession || d.Grant == "" {
		t.Fatalf("joined request after a session answer: %+v", d)
	}
}

// A request that waits on another's card (the same session question)
// and goes away leaves the card up for the card's own request: an answer
// then reaches it.
func TestJoinedRequestGoingLeavesTheCard(t *testing.T) {
	w := newWorld(t)
	w.f.Set(14, 12, 140, w.f.Exe("ssh", "ssh"))
	w.f.Set(15, 12, 150, w.f.Exe("ssh", "ssh"))
	own := w.decide(w.req(13))
	c := w.card()
	joined, other := w.ask(14), w.ask(15)
	waitJoined(t, w, 2)
	joined.cancel()
	if d := got(t, joined.ch); d.Reason != audit.ReasonCanceled {
		t.Fatalf("the joined request that went: %+v", d)
	}
	if cards, _ := w.e.Cards(); len(cards) != 1 || cards[0].ID != c.ID {
		t.Fatalf("the card's own request still waits on card %s, and the cards pending are %+v", c.ID, cards)
	}
	waitJoined(t, w, 1)
	w.answer(c.ID, VerdictSession, 30)
	if d := got(t, own); d.Reason != audit.ReasonApprovedSession {
		t.Fatalf("the card's own request, after a session answer: %+v", d)
	}
	if d := got(t, other.ch); d.Reason != audit.ReasonSession {
		t.Fatalf("the request that stayed joined, after a session answer: %+v", d)
	}
}

// A card shows the request it was shown for. When that request goes
// while others wait on the card, the card no longer shows what asks: it
// is withdrawn, and those that waited on it ask on a card of their own,
// which shows them. An answer covers what its card showed: a once answer
// to the new card signs the request it shows.
func TestCardWhoseRequestWentShowsTheOneThatWaits(t *testing.T) {
	w := newWorld(t)
	w.f.Set(14, 12, 140, w.f.Exe("python3", "python3"))
	own := w.ask(13)
	c := w.card()
	if c.Requester[0].PID != 13 {
		t.Fatalf("the first card shows %+v, want pid 13", c.Requester)
	}
	joined := w.decide(w.req(14))
	waitJoined(t, w, 1)
	own.cancel()
	if d := got(t, own.ch); d.Reason != audit.ReasonCanceled {
		t.Fatalf("the request that went: %+v", d)
	}
	again := w.card()
	if again.ID == c.ID {
		t.Fatalf("card %s still shows pid 13, which has gone, while pid 14 waits on it", c.ID)
	}
	if again.Requester[0].PID != 14 || again.Requester[0].Name != "python3" {
		t.Fatalf("the card the waiting request asks on shows %+v, want pid 14 (python3)", again.Requester)
	}
	if err := w.e.Answer(c.ID, Answer{Verdict: VerdictSession, Subject: -1, Approver: "test"}, w.f.Peer(30)); err == nil {
		t.Fatal("the withdrawn card was answered")
	}
	w.answer(again.ID, VerdictOnce, 30)
	if d := got(t, joined); !d.Allow || d.Reason != audit.ReasonApprovedOnce || d.Card != again.ID {
		t.Fatalf("the request its card showed, approved once: %+v", d)
	}
}

// asked is a request being decided, which cancel takes away.
type asked struct {
	cancel context.CancelFunc
	ch     chan Decision
}

// ask decides a request of pid until it is decided or canceled.
func (w *world) ask(pid int) asked {
	ctx, cancel := context.WithCancel(context.Background())
	w.t.Cleanup(cancel)
	a := asked{cancel, make(chan Decision, 1)}
	go func() { a.ch <- w.e.Decide(ctx, w.req(pid)) }()
	return a
}

// A card that times out answers every request waiting on it, not only
// its own: none is left waiting on a card nobody can answer any more.
func TestJoinedRequestsTimeOutTogether(t *testing.T) {
	w := newWorld(t)
	p := *w.e.Policy()
	p.CardTimeout = 300 * time.Millisecond
	w.e.SetPolicy(&p)
	w.f.Set(14, 12, 140, w.f.Exe("ssh", "ssh"))
	own := w.decide(w.req(13))
	w.card()
	joined := w.decide(w.req(14))
	waitJoined(t, w, 1)
	for name, ch := range map[string]<-chan Decision{"own": own, "joined": joined} {
		if d := got(t, ch); d.Allow || d.Reason != audit.ReasonTimeout {
			t.Fatalf("the %s request of a card that timed out: %+v", name, d)
		}
	}
}

// waitJoined waits until n requests wait on the pending card besides its own.
func waitJoined(t *testing.T, w *world, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		joined := 0
		w.e.mu.Lock()
		for _, c := range w.e.cards {
			joined += c.joined
		}
		w.e.mu.Unlock()
		if joined >= n {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("fewer than %d requests joined the card", n)
}

// The approver check walks the approver's ancestry as deep as it goes: a
// run that nests its approver 100 processes deep is still refused.
func TestApproverAncestryHasNoDepthLimit(t *testing.T) {
	w := newWorld(t)
	ch := w.decide(w.req(13))
	c := w.card()
	sh := w.f.Exe("sh", "a shell")
	parent := 13
	for i := 0; i < 100; i++ {
		pid := 1000 + i
		w.f.Set(pid, parent, uint64(200+i), sh, "sh")
		parent = pid
	}
	approver := 2000
	w.f.Set(approver, parent, 400, w.f.Exe("postern", "postern"), "postern", "approve")
	err := w.e.Answer(c.ID, Answer{Verdict: VerdictOnce, Subject: -1}, w.f.Peer(approver))
	if !errors.Is(err, ErrSelfApprove) {
		t.Fatalf("an approver 101 processes below the requester: %v", err)
	}
	// A walk that cannot decide (a parent younger than its child, not
	// reparented) refuses too.
	w.f.Set(1050, 1, 900, sh, "sh")
	err = w.e.Answer(c.ID, Answer{Verdict: VerdictOnce, Subject: -1}, w.f.Peer(approver))
	if !errors.Is(err, ErrApproverUndecided) || !strings.Contains(err.Error(), procid.ErrUndecided.Error()) {
		t.Fatalf("an undecidable walk: %v", err)
	}
	w.answer(c.ID, VerdictDeny, 30)
	got(t, ch)
}

// Requests that ask one session question at the same moment show one card:
// the check for a card to join and the showing of a new one are one step.
func TestSimultaneousRequestsShowOneCard(t *testing.T) {
	for round := 0; round < 20; round++ {
		w := newWorld(t)
		const n = 16
		reqs := make([]*Request, n)
		for i := range reqs {
			reqs[i] = w.req(13)
		}
		start := make(chan struct{})
		chans := make([]chan Decision, n)
		for i := range reqs {
			chans[i] = make(chan Decision, 1)
			go func(i int) {
				<-start
				chans[i] <- w.e.Decide(context.Background(), reqs[i])
			}(i)
		}
		close(start)
		waitJoined(t, w, n-1)
		cards, _ := w.e.Cards()
		if len(cards) != 1 {
			t.Fatalf("round %d: %d requests asking one question showed %d cards", round, n, len(cards))
		}
		w.answer(cards[0].ID, VerdictDeny, 30)
		for _, ch := range chans {
			if got(t, ch).Allow {
				t.Fatal("a denied card signed")
			}
		}
	}
}

// A card shown while sessions are scoped to destinations says its
// approval covers that destination only; answered after the scope was
// widened, its grant still covers that destination only.
func TestGrantKeepsTheScopeItsCardShowed(t *testing.T) {
	w := newWorld(t)
	p := *w.e.Policy()
	p.Scope = ScopeDestination
	w.e.SetPolicy(&p)
	one, two := hostKey(t), hostKey(t)
	ch := w.decide(w.authTo(13, one))
	c := w.card()
	if !strings.Contains(c.Covers, " only") {
		t.Fatalf("the card says it covers %q", c.Covers)
	}
	wide := p
	wide.Scope = ScopeKey
	w.e.SetPolicy(&wide)
	w.answer(c.ID, VerdictSession, 30)
	if d := got(t, ch); d.Reason != audit.ReasonApprovedSession {
		t.Fatalf("login: %+v", d)
	}
	ch = w.decide(w.authTo(13, two))
	select {
	case d := <-ch:
		t.Fatalf("a grant whose card showed one destination covered another: %+v", d)
	case <-time.After(200 * time.Millisecond):
	}
	w.answer(w.card().ID, VerdictDeny, 30)
	got(t, ch)
}

// A session approved on a card shown under a session lifetime ends with
// that lifetime, though the policy dropped it before the answer; and one
// shown under none gets the lifetime set meanwhile, the shorter.
func TestGrantKeepsTheLifetimeItsCardShowed(t *testing.T) {
	for _, tc := range []struct {
		name        string
		shown, then time.Duration
	}{{"lifetime dropped", time.Hour, 0}, {"lifetime set", 0, time.Hour}, {"lifetime longer", time.Hour, 2 * time.Hour}} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			p := *w.e.Policy()
			p.Lifetime = tc.shown
			w.e.SetPolicy(&p)
			ch := w.decide(w.req(13))
			c := w.card()
			later := p
			later.Lifetime = tc.then
			w.e.SetPolicy(&later)
			w.answer(c.ID, VerdictSession, 30)
			if d := got(t, ch); !d.Allow {
				t.Fatal(d)
			}
			_, grants := w.e.Sessions()
			if len(grants) != 1 {
				t.Fatalf("%d grants", len(grants))
			}
			g := grants[0]
			if g.Expires.IsZero() {
				t.Fatalf("shown with a lifetime of %v, answered under %v: the session never expires", tc.shown, tc.then)
			}
			if life := g.Expires.Sub(g.Approved); life != time.Hour {
				t.Fatalf("shown with a lifetime of %v, answered under %v: the session expires %v after its approval", tc.shown, tc.then, life)
			}
		})
	}
}

// With session_scope = "destination", data the agent cannot interpret
// has no verified destination: it may be a login elsewhere (a challenge
// of pam_ssh_agent_auth), so a grant approved for a signature, which
// covers uses that log in to no host, does not cover it, and it is asked
// about every time.
func TestScopedGrantDoesNotCoverUninterpretedData(t *testing.T) {
	w := newWorld(t)
	p := *w.e.Policy()
	p.Scope = ScopeDestination
	w.e.SetPolicy(&p)
	ch := w.decide(w.sshsig(13))
	w.answer(w.card().ID, VerdictSession, 30)
	if d := got(t, ch); !d.Allow {
		t.Fatal(d)
	}
	ch = w.decide(w.req(13))
	select {
	case d := <-ch:
		t.Fatalf("a grant for a signature covered data of unknown purpose: %+v", d)
	case <-time.After(200 * time.Millisecond):
	}
	if c := w.card(); c.Mode != audit.ModePerCall || c.Unverified == "" {
		t.Fatalf("card for data of unknown purpose: %+v", c)
	}
	w.answer(w.card().ID, VerdictDeny, 30)
	got(t, ch)
}

// A request that waited on another's card decides again, once that card
// is answered, under the policy and host inventory in force then: a host
// marked production while the card was up is asked about on a per-call
// card of the request's own, and the grant the answer made covers none
// of it.
func TestJoinedRequestsDecideAgainUnderThePolicyNow(t *testing.T) {
	w := newWorld(t)
	w.f.Set(14, 12, 140, w.f.Exe("ssh", "ssh"))
	h := hostKey(t)
	w.nameHost("db-1", "", h)
	p := *w.e.Policy()
	p.Rules = []Rule{{Class: "production", Mode: audit.ModePerCall}}
	w.e.SetPolicy(&p)

	for _, v := range []Verdict{VerdictSession, VerdictOnce} {
		w.e.RevokeAll()
		w.nameHost("db-1", "", h)
		own := w.decide(w.authTo(13, h))
		c := w.card()
		if c.Mode != audit.ModeSession {
			t.Fatalf("the card for db-1 before it is production: %+v", c)
		}
		joined := w.decide(w.authTo(14, h))
		waitJoined(t, w, 1)
		w.nameHost("db-1", "production", h)
		w.answer(c.ID, v, 30)
		if d := got(t, own); !d.Allow || d.Card != c.ID {
			t.Fatalf("the card's own request, answered %s: %+v", v, d)
		}
		var next CardView
		for deadline := time.Now().Add(10 * time.Second); next.ID == ""; {
			select {
			case d := <-joined:
				t.Fatalf("answered %s, a request that waited on the card was decided without a card of its own for db-1, production by then: %+v", v, d)
			default:
			}
			if cards, _ := w.e.Cards(); len(cards) > 0 && cards[0].ID != c.ID {
				next = cards[0]
			}
			if time.Now().After(deadline) {
				t.Fatal("no card for the request that waited")
			}
			time.Sleep(2 * time.Millisecond)
		}
		if next.Mode != audit.ModePerCall || next.Destination == nil || len(next.Destination.Classes) != 1 || next.Destination.Classes[0] != "production" {
			t.Fatalf("answered %s, the card of the request that waited: mode %s, destination %+v", v, next.Mode, next.Destination)
		}
		w.answer(next.ID, VerdictOnce, 30)
		if d := got(t, joined); !d.Allow || d.Card != next.ID {
			t.Fatalf("the request that waited, approved on its own card: %+v", d)
		}
	}
}
