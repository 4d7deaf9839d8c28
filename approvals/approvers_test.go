package approvals

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/syncbuf"
)

// fakeApprover is a channel that can be switched on and off, and records
// the cards it was asked to show.
type fakeApprover struct {
	mu    sync.Mutex
	on    bool
	shown []string
	hid   chan string
}

func (f *fakeApprover) Name() string { return "fake" }
func (f *fakeApprover) Reachable() (bool, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.on, ""
}
func (f *fakeApprover) Show(ctx context.Context, c CardView) {
	f.mu.Lock()
	f.shown = append(f.shown, c.ID)
	f.mu.Unlock()
	<-ctx.Done()
	f.hid <- c.ID
}

func requireWorld(t *testing.T, a ...Approver) *world {
	w := newWorld(t)
	w.cfg.RequireApprover = true
	w.cfg.Approvers = a
	w.e = NewEngine(w.cfg)
	return w
}

// With no console attached and no approver reachable, a request that
// needs a card is refused at once with no_approver, and the engine says
// when.
func TestNoApproverRefusesAtOnce(t *testing.T) {
	w := requireWorld(t, &fakeApprover{})
	d := got(t, w.decide(w.req(21)))
	if d.Allow || d.Reason != audit.ReasonNoApprover {
		t.Fatalf("decision %+v, want a no_approver refusal", d)
	}
	if cards, _ := w.e.Cards(); len(cards) != 0 {
		t.Fatalf("a card was left pending: %+v", cards)
	}
	if w.e.LastNoApprover().IsZero() {
		t.Fatal("LastNoApprover not set")
	}
	st := w.e.Approvers()
	if len(st) != 2 || st[0].Name != "console" || st[0].Reachable || st[1].Reachable {
		t.Fatalf("approvers %+v", st)
	}
}

// An attached console outside the requester's tree makes the card show;
// detached, it counts for a grace period, then no more.
func TestConsoleAttachedShowsTheCard(t *testing.T) {
	w := requireWorld(t)
	var mu sync.Mutex
	var skew time.Duration
	w.e.clock = func() time.Time { mu.Lock(); defer mu.Unlock(); return time.Now().Add(skew) }
	detach := w.e.AttachConsole(w.f.Peer(30))
	ch := w.decide(w.req(21))
	c := w.card()
	w.answer(c.ID, VerdictOnce, 30)
	if d := got(t, ch); !d.Allow {
		t.Fatalf("decision %+v", d)
	}
	detach()
	if st := w.e.Approvers(); !st[0].Reachable {
		t.Fatal("a console that just detached does not count for the grace period")
	}
	// Its pin went with its wait: it is found outside from its pid.
	ch = w.decide(w.req(21))
	c = w.card()
	w.answer(c.ID, VerdictDeny, 30)
	if d := got(t, ch); d.Reason != audit.ReasonDenied {
		t.Fatalf("a card while the console that detached counts: %+v", d)
	}
	mu.Lock()
	skew = consoleGrace + time.Second
	mu.Unlock()
	if d := got(t, w.decide(w.req(21))); d.Reason != audit.ReasonNoApprover {
		t.Fatalf("after the grace period: %+v, want no_approver", d)
	}
}

// A console inside the requester's process tree cannot answer its card,
// so it does not count as an approver for it.
func TestConsoleInsideTheTreeDoesNotCount(t *testing.T) {
	w := requireWorld(t)
	defer w.e.AttachConsole(w.f.Peer(21))()
	if d := got(t, w.decide(w.req(21))); d.Reason != audit.ReasonNoApprover {
		t.Fatalf("decision %+v, want no_approver", d)
	}
}

// A console in the run's tree but not in the requester's (under the
// agent, beside the shell that requests) cannot answer the card either:
// the one walk of its ancestry looks for both.
func TestConsoleUnderTheRunDoesNotCount(t *testing.T) {
	w := requireWorld(t)
	w.f.Set(14, 10, 140, w.f.Exe("postern", "postern"), "postern", "approve")
	defer w.e.AttachConsole(w.f.Peer(14))()
	if d := got(t, w.decide(w.req(13))); d.Reason != audit.ReasonNoApprover {
		t.Fatalf("decision %+v, want no_approver", d)
	}
}

// A reachable approver is shown the card, and the card is withdrawn from
// it once decided.
func TestApproverShownAndWithdrawn(t *testing.T) {
	f := &fakeApprover{on: true, hid: make(chan string, 1)}
	w := requireWorld(t, f)
	ch := w.decide(w.req(21))
	c := w.card()
	w.answer(c.ID, VerdictDeny, 30)
	if d := got(t, ch); d.Allow || d.Reason != audit.ReasonDenied {
		t.Fatalf("decision %+v", d)
	}
	select {
	case id := <-f.hid:
		if id != c.ID {
			t.Fatalf("withdrew %s, want %s", id, c.ID)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the card was never withdrawn from the approver")
	}
}

// slowApprover is an approver whose Reachable takes until released, as a
// notification service asked over a slow bus does.
type slowApprover struct {
	fakeApprover
	release chan struct{}
}

func (s *slowApprover) Reachable() (bool, string) {
	<-s.release
	return s.fakeApprover.Reachable()
}

// A card that a console can show goes up at once: the other approvers
// are asked whether they can show it after, and then shown it.
func TestConsoleGetsTheCardBeforeTheOtherApproversAreAsked(t *testing.T) {
	slow := &slowApprover{fakeApprover: fakeApprover{on: true, hid: make(chan string, 1)}, release: make(chan struct{})}
	w := requireWorld(t, slow)
	defer w.e.AttachConsole(w.f.Peer(30))()
	ch := w.decide(w.req(21))
	c := w.card() // fails while Reachable holds the card back
	close(slow.release)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		slow.mu.Lock()
		shown := slices.Clone(slow.shown)
		slow.mu.Unlock()
		if len(shown) > 0 {
			if !slices.Equal(shown, []string{c.ID}) {
				t.Fatalf("the approver was shown %v, want %s", shown, c.ID)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the other approver was never shown the card")
		}
	}
	w.answer(c.ID, VerdictDeny, 30)
	if d := got(t, ch); d.Allow {
		t.Fatalf("decision %+v", d)
	}
	if id := <-slow.hid; id != c.ID {
		t.Fatalf("withdrew %s, want %s", id, c.ID)
	}
}

// brokenAskpass is an askpass program that cannot be run.
type brokenAskpass struct{}

func (brokenAskpass) Confirm(context.Context, string) (bool, error) {
	return false, errors.New("askpass /usr/bin/ssh-askpass: fork/exec: permission denied")
}
func (b brokenAskpass) Word(ctx context.Context, p string) (string, error) {
	_, err := b.Confirm(ctx, p)
	return "", err
}

// An askpass program that was reachable but could not ask is a warning
// in the gateway's log: the person expects its dialog, and nothing else
// says why none came.
func TestAskpassThatCannotAskIsAWarning(t *testing.T) {
	w := newWorld(t)
	var logged syncbuf.Buffer
	w.cfg.Log = slog.New(slog.NewTextHandler(&logged, nil))
	w.cfg.Askpass = brokenAskpass{}
	w.e = NewEngine(w.cfg)
	w.decide(w.req(21))
	c := w.card()
	// The warning comes once the program failed, while the card is up.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logged.String(), "level=WARN msg=\"askpass could not ask\""); {
		if time.Now().After(deadline) {
			t.Fatalf("no warning; log:\n%s", logged.String())
		}
		time.Sleep(time.Millisecond)
	}
	if !strings.Contains(logged.String(), "permission denied") {
		t.Errorf("the warning does not say why:\n%s", logged.String())
	}
	w.answer(c.ID, VerdictDeny, 30)
}

// recordingAskpass says no to every question, and passes on its prompts.
type recordingAskpass struct{ prompts chan string }

func (r recordingAskpass) Confirm(_ context.Context, p string) (bool, error) {
	r.prompts <- p
	return false, nil
}
func (r recordingAskpass) Word(_ context.Context, p string) (string, error) {
	r.prompts <- p
	return "", nil
}

// Askpass programs may read markup in their prompt (a zenity script reads
// Pango markup, a Qt dialog HTML when its first line holds a tag): a
// requester's "<" or "&" reaches one escaped, so that a name such as
// "<b>ssh<!--" hides nothing of the card and adds nothing to it.
func TestAskpassPromptHoldsNoMarkup(t *testing.T) {
	p, ch := askpassPrompt(t, "<b>ssh<!--", "-->Allow", "&lt;")
	if strings.ContainsAny(p, "<>&") {
		t.Fatalf("askpass prompt holds markup:\n%s", p)
	}
	if !strings.Contains(p, `\\x3cb\\x3essh\\x3c!--`) || !strings.Contains(p, `--\\x3eAllow \\x26lt;`) {
		t.Fatalf("askpass prompt does not show the names escaped:\n%s", p)
	}
	if d := got(t, ch); d.Allow {
		t.Fatalf("decision %+v", d)
	}
}

// An askpass program may also read C escapes in its prompt: a zenity
// script does (its dialogs pass the text through GLib's g_strcompress
// before they read markup), which turns the \n a card shows for a
// requester's line break back into one. The prompt reaches such a
// program with every backslash doubled, so that it shows the card as the
// console does: a name cannot add a line to it.
func TestAskpassPromptSurvivesCEscapes(t *testing.T) {
	const fake = "Destination: host key SHA256:dev, verified by session-bind; host inventory: dev-box"
	p, ch := askpassPrompt(t, "ssh\n"+fake)
	shown := gStrcompress(p)
	for _, line := range strings.Split(shown, "\n") {
		if strings.HasPrefix(line, "Destination: host key SHA256:dev") {
			t.Fatalf("read as zenity reads it, the prompt gives a requester's name a line of its own:\n%s", shown)
		}
	}
	if !strings.Contains(shown, `ssh\nDestination: host key SHA256:dev`) {
		t.Fatalf("read as zenity reads it, the prompt does not show the name escaped:\n%s", shown)
	}
	if d := got(t, ch); d.Allow {
		t.Fatalf("decision %+v", d)
	}
}

// askpassPrompt asks a card in an askpass dialog that says no, for a
// request by a process named by argv[0] run with argv, and returns the
// prompt and the decision to come.
func askpassPrompt(t *testing.T, argv ...string) (string, <-chan Decision) {
	t.Helper()
	w := newWorld(t)
	ask := recordingAskpass{make(chan string, 4)}
	w.cfg.Askpass = ask
	w.e = NewEngine(w.cfg)
	w.f.Set(40, 1, 400, w.f.Exe(argv[0], "ssh"), argv...)
	ch := w.decide(w.req(40))
	select {
	case p := <-ask.prompts:
		return p, ch
	case <-time.After(10 * time.Second):
		t.Fatal("askpass was not asked")
	}
	return "", nil
}

// gStrcompress reads s as GLib's g_strcompress does (its documentation:
// \b \f \n \r \t \v and octal \NNN become the byte they name, a
// backslash before any other character is dropped).
func gStrcompress(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch c := s[i]; {
		case c >= '0' && c <= '7':
			v, n := 0, 0
			for ; n < 3 && i < len(s) && s[i] >= '0' && s[i] <= '7'; n, i = n+1, i+1 {
				v = v*8 + int(s[i]-'0')
			}
			i--
			b.WriteByte(byte(v))
		default:
			if r, ok := map[byte]byte{'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v'}[c]; ok {
				c = r
			}
			b.WriteByte(c)
		}
	}
	return b.String()
}

// quickAskpass says yes to every question after a delay, and counts them.
type quickAskpass struct {
	after time.Duration
	asked chan struct{}
}

func (q quickAskpass) Confirm(ctx context.Context, _ string) (bool, error) {
	q.asked <- struct{}{}
	select {
	case <-time.After(q.after):
		return true, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}
func (q quickAskpass) Word(context.Context, string) (string, error) { return "", nil }

// An askpass dialog takes the keyboard when it appears: an Enter typed
// for another window, or a click meant for what was under the pointer,
// answers it at once. A yes that comes before a person could read the
// card approves nothing; one that comes after does.
func TestAskpassYesBeforeTheCardCouldBeReadApprovesNothing(t *testing.T) {
	w := newWorld(t)
	ask := quickAskpass{after: 0, asked: make(chan struct{}, 8)}
	w.cfg.Askpass = ask
	w.e = NewEngine(w.cfg)
	ch := w.decide(w.req(21))
	select {
	case d := <-ch:
		t.Fatalf("an instant yes decided the card: allow %v, reason %s", d.Allow, d.Reason)
	case <-time.After(time.Second):
	}
	if n := len(ask.asked); n != 2 {
		t.Fatalf("askpass asked %d times, want 2 (once more after a yes too soon)", n)
	}
	w.answer(w.card().ID, VerdictDeny, 30)
	got(t, ch)

	w = newWorld(t)
	w.cfg.Askpass = quickAskpass{after: ReadTime + 100*time.Millisecond, asked: make(chan struct{}, 8)}
	w.e = NewEngine(w.cfg)
	if d := got(t, w.decide(w.req(21))); !d.Allow {
		t.Fatalf("a yes after the card was up for %v: allow %v, reason %s", ReadTime+100*time.Millisecond, d.Allow, d.Reason)
	}
}

// stackedAskpass answers two dialogs: the first says no after a while; the
// second, up since before, says yes as soon as the first went away (a
// second Enter, meant for the first, lands on the one it uncovered); any
// later question waits for its card to end.
type stackedAskpass struct {
	calls atomic.Int32
	gone  chan struct{}
}

func (s *stackedAskpass) Confirm(ctx context.Context, _ string) (bool, error) {
	switch s.calls.Add(1) {
	case 1:
		time.Sleep(ReadTime + 200*time.Millisecond)
		close(s.gone)
		return false, nil
	case 2:
		<-s.gone
		time.Sleep(20 * time.Millisecond)
		return true, nil
	}
	<-ctx.Done()
	return false, ctx.Err()
}
func (s *stackedAskpass) Word(context.Context, string) (string, error) { return "", nil }

// A dialog that another one covered takes the keyboard when that one goes
// away: a yes it gets before it was uncovered for ReadTime approves
// nothing.
func TestAskpassYesRightAfterAnotherDialogWentApprovesNothing(t *testing.T) {
	w := newWorld(t)
	ask := &stackedAskpass{gone: make(chan struct{})}
	w.cfg.Askpass = ask
	w.e = NewEngine(w.cfg)
	first := w.decide(w.req(21))
	for ask.calls.Load() < 1 {
		time.Sleep(time.Millisecond)
	}
	second := w.decide(w.req(13))
	if d := got(t, first); d.Allow {
		t.Fatalf("the first card: allow %v, reason %s", d.Allow, d.Reason)
	}
	select {
	case d := <-second:
		t.Fatalf("a yes right after the dialog above went decided the card below: allow %v, reason %s", d.Allow, d.Reason)
	case <-time.After(ReadTime + 200*time.Millisecond):
	}
	w.answer(w.card().ID, VerdictDeny, 30)
	got(t, second)
}
