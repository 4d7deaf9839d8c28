package approvals

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/confine"
	"github.com/postern/postern/internal/inventory"
	"github.com/postern/postern/internal/knownhosts"
	"github.com/postern/postern/internal/procid/proctest"
)

// world is a fake machine for the engine: a process table, a vault state
// and a policy.
type world struct {
	t      *testing.T
	f      *proctest.Fake
	cfg    Config
	e      *Engine
	mu     sync.Mutex
	locked bool
	epoch  uint64
	key    Key
	// atVault, when set, runs once, the next time the engine asks the
	// vault's state: a moment inside the engine's work, for what
	// happens meanwhile.
	atVault func()
}

// The fake process tree:
//
//	1 init
//	├── 5 postern run (launches 10)
//	│   └── 10 claude
//	│       └── 11 bash ── 12 git ── 13 ssh
//	├── 20 claude (an identical second agent)
//	│   └── 21 ssh
//	└── 30 postern approve (an approver outside both trees)
func newWorld(t *testing.T) *world {
	f := proctest.New(t)
	initExe := f.Exe("init", "init")
	claude := f.Exe("claude", "the agent program")
	sh := f.Exe("bash", "a shell")
	git := f.Exe("git", "git")
	sshExe := f.Exe("ssh", "ssh")
	postern := f.Exe("postern", "postern")
	f.Set(1, 0, 1, initExe)
	f.Set(5, 1, 90, postern, "postern", "run", "--", "claude")
	f.Set(10, 5, 100, claude, "claude")
	f.Set(11, 10, 110, sh, "bash")
	f.Set(12, 11, 120, git, "git", "push")
	f.Set(13, 12, 130, sshExe, "ssh", "git@github.com", "git-receive-pack")
	f.Set(20, 1, 200, claude, "claude")
	f.Set(21, 20, 210, sshExe, "ssh", "prod-db-1")
	f.Set(30, 1, 300, postern, "postern", "approve")
	w := &world{t: t, f: f, epoch: 7, key: Key{Fingerprint: "SHA256:key", Comment: "work"}}
	// postern's executable is pid 5's ("postern run").
	self, _, err := f.Table.ExeID(5)
	if err != nil {
		t.Fatal(err)
	}
	w.cfg = Config{
		Executable: self,
		Procs:      f.Table,
		Log:        slog.New(slog.DiscardHandler),
		BootID:     "boot-1",
		Vault: func() (bool, uint64) {
			w.mu.Lock()
			locked, epoch, at := w.locked, w.epoch, w.atVault
			w.atVault = nil
			w.mu.Unlock()
			if at != nil {
				at()
			}
			return locked, epoch
		},
		Policy:      &Policy{Mode: audit.ModeSession, CardTimeout: 5 * time.Second, Cooldown: time.Minute, Hosts: knownhosts.Open(nil), Agents: []string{"claude"}, Scope: ScopeKey},
		ContextFile: filepath.Join(t.TempDir(), "context.json"),
	}
	w.e = NewEngine(w.cfg)
	return w
}

func (w *world) setVault(locked bool, epoch uint64) {
	w.mu.Lock()
	w.locked, w.epoch = locked, epoch
	w.mu.Unlock()
}

func (w *world) req(pid int) *Request {
	return &Request{Requester: w.f.Peer(pid), Channel: Channel{Kind: ChannelAgent}, Key: w.key, Purpose: PurposeOther}
}

// launch starts a run the way "postern run" does (pid launched by 5).
func (w *world) launch(label string, pid int) *Run {
	w.t.Helper()
	run := w.e.PrepareRun(label, w.f.Peer(5).Process, func(id string) string { return "/sock." + id })
	if _, err := w.e.StartRun(run.ID, pid, w.f.Peer(5), confine.Level{}); err != nil {
		w.t.Fatal(err)
	}
	return run
}

// runReq is pid's request through run's socket.
func (w *world) runReq(run *Run, pid int) *Request {
	r := w.req(pid)
	r.Channel = Channel{Kind: ChannelRun, Run: run.ID}
	return r
}

// decide runs Decide in the background.
func (w *world) decide(r *Request) <-chan Decision {
	ch := make(chan Decision, 1)
	go func() { ch <- w.e.Decide(context.Background(), r) }()
	return ch
}

// card waits for the next pending card.
func (w *world) card() CardView {
	w.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if cards, _ := w.e.Cards(); len(cards) > 0 {
			return cards[0]
		}
		time.Sleep(2 * time.Millisecond)
	}
	w.t.Fatal("no card was shown")
	return CardView{}
}

func (w *world) answer(id string, v Verdict, approver int) {
	w.t.Helper()
	if err := w.e.Answer(id, Answer{Verdict: v, Subject: -1, Approver: "test"}, w.f.Peer(approver)); err != nil {
		w.t.Fatal(err)
	}
}

func got(t *testing.T, ch <-chan Decision) Decision {
	t.Helper()
	select {
	case d := <-ch:
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("no decision")
	}
	return Decision{}
}

// approve makes pid's request, approves the card for a session, and
// returns the decision and the card.
func (w *world) approve(pid int) (Decision, CardView) {
	ch := w.decide(w.req(pid))
	c := w.card()
	w.answer(c.ID, VerdictSession, 30)
	return got(w.t, ch), c
}

func TestSessionCoversOnlyTheApprovedRunsDescendants(t *testing.T) {
	w := newWorld(t)
	d, c := w.approve(13)
	if !d.Allow || d.Reason != "approved_session" {
		t.Fatalf("decision %+v", d)
	}
	// The card offered the chain and preselected the agent.
	if len(c.Subjects) != 5 || c.Subjects[c.Selected].PID != 10 || c.Reason != audit.ReasonCardNew || c.Mode != audit.ModeSession {
		t.Fatalf("card %+v", c)
	}
	// Another ssh under the same claude rides the grant without a card.
	w.f.Set(14, 12, 140, w.f.Exe("ssh", "ssh"))
	if d := w.e.Decide(context.Background(), w.req(14)); !d.Allow || d.Reason != "session" || d.Grant == "" {
		t.Fatalf("descendant: %+v", d)
	}
	// An identical claude (same binary, same arguments) is not covered.
	ch := w.decide(w.req(21))
	c2 := w.card()
	if c2.Subjects[c2.Selected].PID != 20 || c2.Reason != audit.ReasonCardNew {
		t.Fatalf("identical agent's card: %+v", c2)
	}
	w.answer(c2.ID, VerdictDeny, 30)
	if d := got(t, ch); d.Allow {
		t.Fatal("an identical process shared the grant")
	}
}

func TestPidReuseEndsTheGrant(t *testing.T) {
	w := newWorld(t)
	w.approve(13)
	// claude exits; its pid goes to a new process. The old children are
	// now orphans whose parent pid names a younger process.
	w.f.Kill(10)
	w.f.Set(10, 1, 500, w.f.Exe("claude", "the agent program"), "claude")
	ch := w.decide(w.req(13))
	c := w.card()
	w.answer(c.ID, VerdictDeny, 30)
	if d := got(t, ch); d.Allow {
		t.Fatal("a reused pid inherited the grant")
	}
	if runs, grants := w.e.Sessions(); len(grants) != 0 || len(runs) != 0 {
		t.Fatalf("grant survived its run: %v %v", runs, grants)
	}
}

func TestExecOnTheRunEndsIt(t *testing.T) {
	w := newWorld(t)
	w.approve(13)
	// Same pid, same start time, another program: a new process.
	w.f.Set(10, 5, 100, w.f.Exe("evil", "another program"))
	ch := w.decide(w.req(13))
	c := w.card()
	w.answer(c.ID, VerdictDeny, 30)
	got(t, ch)
	w.e.mu.Lock()
	last := w.e.past[len(w.e.past)-1]
	w.e.mu.Unlock()
	if last.Reason != audit.ReasonProcessChanged {
		t.Fatalf("grant ended with %q, want process_changed", last.Reason)
	}
}

// exec -a x ./other.sh under the same interpreter: the same pid, start
// time and executable, and yet another program. The grant ends as
// process_changed, and the card for the new program says so.
func TestExecOfTheSameExecutableEndsTheRun(t *testing.T) {
	w := newWorld(t)
	w.approve(13)
	claude, _ := w.f.Table.Inspect(10)
	w.f.Exec(10, claude.Exe.Path, "x", "other.sh")
	ch := w.decide(w.req(13))
	c := w.card()
	if c.Reason != audit.ReasonReauthProcessChanged || !strings.Contains(c.Changed, "executed another program") {
		t.Fatalf("card after the exec: %s %q", c.Reason, c.Changed)
	}
	w.answer(c.ID, VerdictDeny, 30)
	if d := got(t, ch); d.Allow {
		t.Fatal("the exec'd program rode the grant")
	}
	if runs, grants := w.e.Sessions(); len(grants) != 0 || len(runs) != 0 {
		t.Fatalf("the grant survived the exec: %v %v", runs, grants)
	}
}

// The process a card showed executes the same executable, another
// program, while the card waits: a session approval of it binds nothing,
// not the program it runs now.
func TestExecWhileTheCardWaitsBindsNothing(t *testing.T) {
	w := newWorld(t)
	ch := w.decide(w.req(21))
	c := w.card()
	if s := c.Subjects[c.Selected]; s.PID != 20 {
		t.Fatalf("preselected pid %d, want the agent 20", s.PID)
	}
	claude, _ := w.f.Table.Inspect(20)
	w.f.Exec(20, claude.Exe.Path, "x", "other.sh")
	if err := w.e.Answer(c.ID, Answer{Verdict: VerdictSession, Subject: -1, Approver: "test"}, w.f.Peer(30)); err == nil {
		t.Fatal("a session was approved for the program pid 20 executed after the card was shown")
	}
	if _, grants := w.e.Sessions(); len(grants) != 0 {
		t.Fatalf("grants after the exec: %v", grants)
	}
	w.answer(c.ID, VerdictDeny, 30)
	got(t, ch)
}

func TestLaunchedRunAndProcessChanged(t *testing.T) {
	w := newWorld(t)
	run := w.e.PrepareRun("deploy-bot", w.f.Peer(5).Process, func(id string) string { return "/sock." + id })
	if _, err := w.e.StartRun(run.ID, 10, w.f.Peer(5), confine.Level{}); err != nil {
		t.Fatal(err)
	}
	// Only the run's descendants are admitted on its socket.
	admit := w.e.AdmitRun(run.ID)
	if err := admit(w.f.Peer(13)); err != nil {
		t.Fatal(err)
	}
	if err := admit(w.f.Peer(21)); !errors.Is(err, ErrNotDescendant) {
		t.Fatalf("another process admitted: %v", err)
	}
	r := w.req(13)
	r.Channel = Channel{Kind: ChannelRun, Run: run.ID}
	ch := w.decide(r)
	c := w.card()
	if len(c.Subjects) != 1 || c.Run.ID != run.ID || c.Run.Label != "deploy-bot" {
		t.Fatalf("run card: %+v", c)
	}
	w.answer(c.ID, VerdictSession, 30)
	if d := got(t, ch); !d.Allow {
		t.Fatal(d)
	}
	// The run exits; a replacement with the same label is asked again and
	// told why.
	w.e.EndRun(run.ID, audit.ReasonProcessExited)
	w.f.Set(5, 1, 90, w.f.Exe("postern", "postern"))
	w.f.Set(40, 5, 600, w.f.Exe("claude", "the agent program"), "claude")
	w.f.Set(41, 40, 610, w.f.Exe("ssh", "ssh"))
	run2 := w.e.PrepareRun("deploy-bot", w.f.Peer(5).Process, func(id string) string { return "/sock." + id })
	if _, err := w.e.StartRun(run2.ID, 40, w.f.Peer(5), confine.Level{}); err != nil {
		t.Fatal(err)
	}
	r2 := w.req(41)
	r2.Channel = Channel{Kind: ChannelRun, Run: run2.ID}
	ch = w.decide(r2)
	c = w.card()
	if c.Reason != audit.ReasonReauthProcessChanged || c.Changed == "" {
		t.Fatalf("replacement card: %s %q", c.Reason, c.Changed)
	}
	w.answer(c.ID, VerdictDeny, 30)
	if d := got(t, ch); d.Allow {
		t.Fatal("replacement signed without approval")
	}
	// StartRun refuses a pid that is not the caller's child.
	run3 := w.e.PrepareRun("x", w.f.Peer(5).Process, func(id string) string { return "/sock." + id })
	if _, err := w.e.StartRun(run3.ID, 20, w.f.Peer(5), confine.Level{}); err == nil {
		t.Fatal("a foreign process was registered as a run")
	}
}

func TestVaultStates(t *testing.T) {
	w := newWorld(t)
	w.approve(13)
	// Locked: refused at once, nothing asked.
	w.setVault(true, 8)
	w.e.EpochChanged(true)
	if d := w.e.Decide(context.Background(), w.req(13)); d.Allow || d.Reason != audit.ReasonVaultLocked {
		t.Fatalf("locked: %+v", d)
	}
	if cards, _ := w.e.Cards(); len(cards) != 0 {
		t.Fatal("a card was shown while locked")
	}
	// Unlocked: the old grant is gone; the card says why.
	w.setVault(false, 9)
	w.e.EpochChanged(false)
	ch := w.decide(w.req(13))
	c := w.card()
	if c.Reason != audit.ReasonReauthVaultStateChanged {
		t.Fatalf("after unlock: %s", c.Reason)
	}
	// An answer given after another lock and unlock authorizes nothing.
	w.setVault(false, 11)
	w.answer(c.ID, VerdictSession, 30)
	if d := got(t, ch); d.Allow || d.Reason != "vault_state_changed" {
		t.Fatalf("answer across an epoch change: %+v", d)
	}
	if _, grants := w.e.Sessions(); len(grants) != 0 {
		t.Fatal("a grant was stored from a stale epoch")
	}
	// A lock while a card is pending refuses it at once.
	ch = w.decide(w.req(13))
	w.card()
	w.setVault(true, 12)
	w.e.EpochChanged(true)
	if d := got(t, ch); d.Allow || d.Reason != audit.ReasonVaultLocked {
		t.Fatalf("pending card at lock: %+v", d)
	}
}

func TestUnansweredCardsCoolDown(t *testing.T) {
	w := newWorld(t)
	p := *w.e.Policy()
	p.CardTimeout = 30 * time.Millisecond
	w.e.SetPolicy(&p)
	if d := w.e.Decide(context.Background(), w.req(13)); d.Allow || d.Reason != "timeout" {
		t.Fatalf("unanswered: %+v", d)
	}
	if d := w.e.Decide(context.Background(), w.req(13)); d.Allow || d.Reason != "cooldown" {
		t.Fatalf("second request: %+v", d)
	}
	if cards, _ := w.e.Cards(); len(cards) != 0 {
		t.Fatal("cards piled up")
	}
}

// A launched run's program may have a terminal session of its own (a
// confined run's own terminal), while its output reaches the terminal
// "postern run" was started from: an answer from that terminal's session
// is refused too, from any other session taken.
func TestLaunchersSessionRefused(t *testing.T) {
	w := newWorld(t)
	w.f.SetSession(5, 1, 90, 50, w.f.Exe("postern", "postern"), "postern", "run", "--", "claude")
	w.f.SetSession(10, 5, 100, 10, w.f.Exe("claude", "claude"), "claude")
	run := w.e.PrepareRun("", w.f.Peer(5).Process, func(id string) string { return "/sock." + id })
	if _, err := w.e.StartRun(run.ID, 10, w.f.Peer(5), confine.Level{}); err != nil {
		t.Fatal(err)
	}
	ch := w.decide(w.runReq(run, 13))
	c := w.card()
	w.f.SetSession(17, 1, 170, 50, w.f.Exe("postern", "postern"), "postern", "approve")
	if err := w.e.Answer(c.ID, Answer{Verdict: VerdictSession, Subject: -1}, w.f.Peer(17)); !errors.Is(err, ErrSameSession) {
		t.Fatalf("an approver in the launcher's session: %v", err)
	}
	if err := w.e.OutsideRuns(w.f.Peer(17), "test"); !errors.Is(err, ErrSameSession) {
		t.Fatalf("an approver-only act from the launcher's session: %v", err)
	}
	w.answer(c.ID, VerdictOnce, 30)
	if d := got(t, ch); !d.Allow {
		t.Fatal(d)
	}
}

// startLaunchedRun starts a run as "postern run" (pid 5, in terminal
// session 50) launches claude (pid 10, in a session of its own), and puts
// an approver in the launcher's session (pid 17).
func startLaunchedRun(t *testing.T, w *world) *Run {
	t.Helper()
	w.f.SetSession(5, 1, 90, 50, w.f.Exe("postern", "postern"), "postern", "run", "--", "claude")
	w.f.SetSession(10, 5, 100, 10, w.f.Exe("claude", "claude"), "claude")
	run := w.e.PrepareRun("", w.f.Peer(5).Process, func(id string) string { return "/sock." + id })
	if _, err := w.e.StartRun(run.ID, 10, w.f.Peer(5), confine.Level{}); err != nil {
		t.Fatal(err)
	}
	w.f.SetSession(17, 1, 170, 50, w.f.Exe("postern", "postern"), "postern", "approve")
	return run
}

// The launcher's session stays the run's after a gateway restart: the
// restored run refuses answers and approver-only acts from it, as it did.
func TestLaunchersSessionRefusedAfterARestart(t *testing.T) {
	w := newWorld(t)
	startLaunchedRun(t, w)
	w.e.Stop()
	cfg := w.cfg
	cfg.BootID = "boot-2"
	w.e = NewEngine(cfg)
	restored := w.e.Restore()
	if len(restored) != 1 {
		t.Fatalf("restored %d runs, want 1", len(restored))
	}
	ch := w.decide(w.runReq(restored[0], 13))
	c := w.card()
	if err := w.e.Answer(c.ID, Answer{Verdict: VerdictOnce, Subject: -1}, w.f.Peer(17)); !errors.Is(err, ErrSameSession) {
		t.Fatalf("after a restart, an approver in the launcher's session: %v", err)
	}
	if err := w.e.OutsideRuns(w.f.Peer(17), "test"); !errors.Is(err, ErrSameSession) {
		t.Fatalf("after a restart, an approver-only act from the launcher's session: %v", err)
	}
	w.answer(c.ID, VerdictDeny, 30)
	got(t, ch)
}

// A request of the run's process that comes another way than the run's
// socket (through the bastion, or the main socket) is refused an answer
// from the launcher's session too.
func TestLaunchersSessionRefusedOnCardsOfItsProcesses(t *testing.T) {
	w := newWorld(t)
	startLaunchedRun(t, w)
	w.f.Set(13, 10, 130, w.f.Exe("ssh", "ssh"), "ssh", "prod")
	for _, kind := range []ChannelKind{ChannelBastion, ChannelAgent} {
		r := w.req(13)
		r.Channel = Channel{Kind: kind}
		ch := w.decide(r)
		c := w.card()
		if err := w.e.Answer(c.ID, Answer{Verdict: VerdictOnce, Subject: -1}, w.f.Peer(17)); !errors.Is(err, ErrSameSession) {
			t.Fatalf("%s card of the run's process, an approver in the launcher's session: %v", kind, err)
		}
		w.answer(c.ID, VerdictDeny, 30)
		got(t, ch)
	}
}

func TestSelfApprovalRefused(t *testing.T) {
	w := newWorld(t)
	ch := w.decide(w.req(13))
	c := w.card()
	w.f.Set(15, 13, 150, w.f.Exe("postern", "postern"), "postern", "approve")
	w.f.Set(16, 11, 160, w.f.Exe("postern", "postern"), "postern", "approve")
	for _, pid := range []int{13, 15, 10, 16} {
		if err := w.e.Answer(c.ID, Answer{Verdict: VerdictSession, Subject: -1}, w.f.Peer(pid)); !errors.Is(err, ErrSelfApprove) {
			t.Fatalf("approver pid %d: %v", pid, err)
		}
	}
	// A process that left the tree by a double fork is reparented to init
	// but keeps the requester's terminal session.
	w.f.SetSession(17, 1, 170, 13, w.f.Exe("postern", "postern"), "postern", "approve")
	if err := w.e.Answer(c.ID, Answer{Verdict: VerdictSession, Subject: -1}, w.f.Peer(17)); !errors.Is(err, ErrSameSession) {
		t.Fatalf("double-forked approver: %v", err)
	}
	w.answer(c.ID, VerdictOnce, 30)
	if d := got(t, ch); !d.Allow || d.Reason != "approved_once" {
		t.Fatal(d)
	}
	// Once approves this call only.
	ch = w.decide(w.req(13))
	w.answer(w.card().ID, VerdictDeny, 30)
	if d := got(t, ch); d.Allow {
		t.Fatal("a once answer covered a second call")
	}
}

// nameHost puts a host in the inventory, as "postern hosts add" does.
func (w *world) nameHost(name, class string, keys ...ssh.PublicKey) {
	w.t.Helper()
	var ks []inventory.Key
	for _, k := range keys {
		ks = append(ks, inventory.NewKey(k, "test", time.Now()))
	}
	inv, err := w.e.Hosts().With(name, &class, ks, time.Now())
	if err != nil {
		w.t.Fatal(err)
	}
	w.e.SetHosts(inv)
}

func hostKey(t *testing.T) ssh.PublicKey {
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	k, _ := ssh.NewPublicKey(pub)
	return k
}

func TestPerCallHostInsideSession(t *testing.T) {
	w := newWorld(t)
	prod, github := hostKey(t), hostKey(t)
	w.nameHost("prod-db-1", "", prod)
	w.nameHost("github.com", "", github)
	p := *w.e.Policy()
	p.Rules = []Rule{{Host: "prod-*", Mode: audit.ModePerCall}}
	w.e.SetPolicy(&p)
	withDest := func(pid int, k ssh.PublicKey, fwd bool) *Request {
		r := w.req(pid)
		r.Purpose = PurposeAuth
		r.Dest = &Destination{HostKey: k, Forwarding: fwd}
		return r
	}
	ch := w.decide(withDest(13, github, false))
	w.answer(w.card().ID, VerdictSession, 30)
	got(t, ch)
	if d := w.e.Decide(context.Background(), withDest(13, github, false)); d.Reason != "session" {
		t.Fatalf("github inside the session: %+v", d)
	}
	for i := 0; i < 2; i++ {
		ch := w.decide(withDest(13, prod, false))
		c := w.card()
		if c.Mode != audit.ModePerCall || c.Reason != audit.ReasonPerCall || c.Destination.Names[0] != "prod-db-1" {
			t.Fatalf("prod card: %+v", c)
		}
		// A session answer to a per-call card is this call only.
		w.answer(c.ID, VerdictSession, 30)
		if d := got(t, ch); !d.Allow || d.Reason != "approved_once" {
			t.Fatalf("prod: %+v", d)
		}
	}
	// A forwarded connection never rides the session.
	ch = w.decide(withDest(13, github, true))
	if c := w.card(); c.Mode != audit.ModePerCall || !c.Destination.Forwarding {
		t.Fatalf("forwarded: %+v", c)
	}
	w.answer(w.card().ID, VerdictDeny, 30)
	got(t, ch)
}

func TestModeFor(t *testing.T) {
	f := proctest.New(t)
	claude := f.Exe("claude", "agent")
	f.Set(10, 1, 100, claude)
	proc, _ := f.Table.Inspect(10)
	progs := func() []program { return []program{{path: proc.Exe.Path, hash: proc.Exe.Hash()}} }
	key := Key{Fingerprint: "SHA256:abc", Comment: "deploy@ci"}
	tests := []struct {
		name  string
		def   audit.Mode
		rules []Rule
		names []string
		fwd   bool
		want  audit.Mode
	}{
		{"default", audit.ModeSession, nil, nil, false, audit.ModeSession},
		{"no rule matches", audit.ModeSession, []Rule{{Host: "prod-*", Mode: audit.ModePerCall}}, []string{"github.com"}, false, audit.ModeSession},
		{"host rule", audit.ModeSession, []Rule{{Host: "prod-*", Mode: audit.ModePerCall}}, []string{"prod-db-1"}, false, audit.ModePerCall},
		{"host rule without a destination", audit.ModeSession, []Rule{{Host: "*", Mode: audit.ModeDeny}}, nil, false, audit.ModeSession},
		{"relaxing rule", audit.ModePerCall, []Rule{{Host: "github.com", Mode: audit.ModeSession}}, []string{"github.com"}, false, audit.ModeSession},
		{"strictest wins", audit.ModeSession, []Rule{{Host: "github.com", Mode: audit.ModeNone}, {Key: "deploy@*", Mode: audit.ModeDeny}}, []string{"github.com"}, false, audit.ModeDeny},
		{"key fingerprint", audit.ModeNone, []Rule{{Key: "SHA256:abc", Mode: audit.ModePerCall}}, nil, false, audit.ModePerCall},
		{"exe path", audit.ModeNone, []Rule{{Exe: proc.Exe.Path, Mode: audit.ModeSession}}, nil, false, audit.ModeSession},
		{"exe path glob", audit.ModeNone, []Rule{{Exe: filepath.Dir(proc.Exe.Path) + "/*", Mode: audit.ModeSession}}, nil, false, audit.ModeSession},
		{"exe hash", audit.ModeNone, []Rule{{Exe: "sha256:" + proc.Exe.Hash(), Mode: audit.ModeDeny}}, nil, false, audit.ModeDeny},
		{"exe hash mismatch", audit.ModeNone, []Rule{{Exe: "sha256:00", Mode: audit.ModeDeny}}, nil, false, audit.ModeNone},
		{"all fields must match", audit.ModeNone, []Rule{{Host: "prod-*", Key: "other", Mode: audit.ModeDeny}}, []string{"prod-1"}, false, audit.ModeNone},
		{"forwarding asks per call", audit.ModeSession, nil, []string{"github.com"}, true, audit.ModePerCall},
		{"forwarding keeps none", audit.ModeNone, nil, nil, true, audit.ModeNone},
	}
	for _, tt := range tests {
		p := &Policy{Mode: tt.def, Rules: tt.rules}
		if m := p.modeFor(&facts{names: tt.names, key: key, programs: progs}, tt.fwd); m != tt.want {
			t.Errorf("%s: mode %s, want %s", tt.name, m, tt.want)
		}
	}
}

func TestHostCandidates(t *testing.T) {
	got := hostCandidates([]string{"ssh", "-p", "2222", "-o", "HostKeyAlias=alias", "-i", "key", "git@prod-db-1", "uptime"})
	want := []string{"alias", "prod-db-1", "[prod-db-1]:2222"}
	if len(got) != len(want) {
		t.Fatalf("%q", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%q, want %q", got, want)
		}
	}
	if c := hostCandidates([]string{"git", "push"}); c != nil {
		t.Fatalf("non-ssh: %q", c)
	}
	if c := hostCandidates([]string{"/usr/bin/ssh", "ssh://me@host:2200/x"}); len(c) != 2 || c[0] != "host" || c[1] != "[host]:2200" {
		t.Fatalf("url: %q", c)
	}
	// ssh's own parsing: clustered options, options after the
	// destination, "--", the remote command, options ssh refuses.
	for _, tt := range []struct {
		argv []string
		want []string
	}{
		{[]string{"ssh", "-4Cp2222", "h"}, []string{"h", "[h]:2222"}},
		{[]string{"ssh", "h", "-p", "2222", "uptime", "-p", "1"}, []string{"h", "[h]:2222"}},
		{[]string{"ssh", "--", "h", "-p", "2222"}, []string{"h"}},
		{[]string{"ssh", "-l", "-p", "h"}, []string{"h"}},
		{[]string{"ssh", "-Z", "h"}, nil},
		{[]string{"ssh", "-p"}, nil},
		// An IPv6 address in an ssh:// URI is in brackets, as ssh reads it.
		{[]string{"ssh", "ssh://me@[::1]:2222/"}, []string{"::1", "[::1]:2222"}},
		{[]string{"ssh", "ssh://[2001:db8::5]"}, []string{"2001:db8::5"}},
	} {
		if c := hostCandidates(tt.argv); !slices.Equal(c, tt.want) {
			t.Errorf("hostCandidates(%q) = %q, want %q", tt.argv, c, tt.want)
		}
	}
}

func TestGatewayRestartedIsExplained(t *testing.T) {
	w := newWorld(t)
	run, e2, restored := w.restartApproved()
	// The same socket, a new run id and nonce: the new gateway has not
	// bound this run.
	if len(restored) != 1 || restored[0].ID == run.ID || restored[0].Socket != run.Socket || restored[0].Nonce == run.Nonce || restored[0].PrevBoot != "boot-1" {
		t.Fatalf("restored %+v", restored[0])
	}
	w.e = e2
	ch, c := w.askedAfterRestart(restored[0])
	w.answer(c.ID, VerdictDeny, 30)
	if d := got(t, ch); d.Allow {
		t.Fatal("signed after a restart without a new approval")
	}
	// A run whose process is gone is not restored.
	w.f.Kill(10)
	cfg3 := w.cfg
	cfg3.BootID = "boot-3"
	e3 := NewEngine(cfg3)
	e2.Stop()
	if rs := e3.Restore(); len(rs) != 0 {
		t.Fatalf("restored a dead run: %+v", rs)
	}
}

// The display context is a file of the user's: a run it says was
// confined, in namespaces that are the gateway's own (a process that made
// none), is not restored as confined, and its card says so.
func TestRestoredConfinementIsCheckedAgain(t *testing.T) {
	w := newWorld(t)
	w.launch("agent", 10)
	w.e.Stop()
	// The run's namespaces, as the fake table shows them: the gateway's.
	d := filepath.Join(w.f.Root, "10", "ns")
	for _, n := range []string{"pid", "mnt"} {
		if err := os.WriteFile(filepath.Join(d, n), []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ns, err := w.f.Peer(10).Namespaces()
	if err != nil {
		t.Fatal(err)
	}
	past, err := loadPast(w.cfg.ContextFile)
	if err != nil || len(past) != 1 {
		t.Fatalf("display context: %v %+v", err, past)
	}
	past[0].Confinement, past[0].NS = confine.Level{Namespaces: true, Landlock: 7}, ns
	if err := savePast(w.cfg.ContextFile, past); err != nil {
		t.Fatal(err)
	}
	cfg2 := w.cfg
	cfg2.BootID = "boot-2"
	e2 := NewEngine(cfg2)
	e2.ownNS = ns
	restored := e2.Restore()
	if len(restored) != 1 {
		t.Fatalf("restored %d runs, want 1", len(restored))
	}
	if r := restored[0]; r.Confinement.Confined() || r.NS.Known() {
		t.Fatalf("restored as %s in %+v, the gateway's own namespaces", r.Confinement, r.NS)
	}
}

// Each binding of a grant is checked on every request: a grant whose
// run's launch nonce, boot id or vault epoch no longer match covers
// nothing, even when everything else does.
func TestGrantBindingsAreCheckedEachTime(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(w *world, g *Grant)
		ended  audit.Reason
	}{
		{"launch nonce", func(w *world, g *Grant) { g.Run.Nonce = randomHex(16) }, ""},
		{"boot id", func(w *world, g *Grant) { g.BootID = "an-earlier-boot" }, audit.ReasonGatewayRestarted},
		{"vault epoch", func(w *world, g *Grant) { w.setVault(false, 8) }, audit.ReasonVaultStateChanged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			if d, _ := w.approve(13); !d.Allow {
				t.Fatal(d)
			}
			w.e.mu.Lock()
			var g *Grant
			for _, x := range w.e.grants {
				g = x
			}
			tc.change(w, g)
			w.e.mu.Unlock()
			ch := w.decide(w.req(13))
			c := w.card()
			w.answer(c.ID, VerdictDeny, 30)
			if d := got(t, ch); d.Allow {
				t.Fatalf("a grant with a changed %s covered the request", tc.name)
			}
			if tc.ended != "" && g.ended != tc.ended {
				t.Fatalf("grant ended with %q, want %q", g.ended, tc.ended)
			}
		})
	}
}

func TestRevoke(t *testing.T) {
	w := newWorld(t)
	dA, _ := w.approve(13) // claude 10
	dB, _ := w.approve(21) // claude 20
	if n, err := w.e.Revoke("R-none"); err == nil || n != 0 {
		t.Fatalf("revoking an unknown target: %d %v", n, err)
	}
	if n, err := w.e.Revoke(dA.Grant); err != nil || n != 1 {
		t.Fatalf("revoking grant %s: %d %v", dA.Grant, n, err)
	}
	// The run lives on without grants: revoking it ends nothing and is
	// no error.
	if n, err := w.e.Revoke(dA.Run); err != nil || n != 0 {
		t.Fatalf("revoking run %s again: %d %v", dA.Run, n, err)
	}
	if n, err := w.e.Revoke(dB.Run); err != nil || n != 1 {
		t.Fatalf("revoking run %s: %d %v", dB.Run, n, err)
	}
	if _, grants := w.e.Sessions(); len(grants) != 0 {
		t.Fatalf("grants left: %+v", grants)
	}
	w.approve(13)
	w.approve(21)
	if n := w.e.RevokeAll(); n != 2 {
		t.Fatalf("RevokeAll ended %d grants, want 2", n)
	}
	if _, grants := w.e.Sessions(); len(grants) != 0 {
		t.Fatalf("after RevokeAll: %+v", grants)
	}
	w.e.mu.Lock()
	last := w.e.past[len(w.e.past)-1]
	w.e.mu.Unlock()
	if last.Reason != audit.ReasonRevoked {
		t.Fatalf("revoked grant ended with %q", last.Reason)
	}
}

// A grant ends as vault_locked when the vault locks, and as
// vault_state_changed when the epoch moves with the vault still unlocked
// (its file changed); a pending card is refused with the same word.
func TestEpochChangeEndReasons(t *testing.T) {
	w := newWorld(t)
	lastEnd := func() audit.Reason {
		w.e.mu.Lock()
		defer w.e.mu.Unlock()
		return w.e.past[len(w.e.past)-1].Reason
	}
	w.approve(13)
	w.setVault(false, 8)
	w.e.EpochChanged(false)
	if r := lastEnd(); r != "vault_state_changed" {
		t.Fatalf("epoch change while unlocked ended the grant as %q", r)
	}
	ch := w.decide(w.req(21))
	w.card()
	w.setVault(false, 9)
	w.e.EpochChanged(false)
	if d := got(t, ch); d.Allow || d.Reason != "vault_state_changed" {
		t.Fatalf("pending card at an epoch change: %+v", d)
	}
	w.approve(13)
	w.setVault(true, 10)
	w.e.EpochChanged(true)
	if r := lastEnd(); r != "vault_locked" {
		t.Fatalf("lock ended the grant as %q", r)
	}
}

// A prepared run is started only by the "postern run" that prepared it:
// another process of the user, which can list the runs and their ids,
// cannot bind a person's run (its label, its socket) to a child of its
// own, nor end it by trying.
func TestStartRunOnlyByItsPreparer(t *testing.T) {
	w := newWorld(t)
	run := w.e.PrepareRun("deploy", w.f.Peer(5).Process, func(id string) string { return "/sock." + id })
	// pid 21 is the child of pid 20, another process of the user.
	if _, err := w.e.StartRun(run.ID, 21, w.f.Peer(20), confine.Level{}); err == nil {
		t.Fatal("another process bound the prepared run to a child of its own")
	}
	if _, err := w.e.StartRun(run.ID, 10, w.f.Peer(5), confine.Level{}); err != nil {
		t.Fatalf("the preparer could no longer start its run: %v", err)
	}
	if err := w.e.AdmitRun(run.ID)(w.f.Peer(13)); err != nil {
		t.Fatalf("the run's own descendant refused: %v", err)
	}
}

// A lock that comes after a request read the vault's epoch, and before
// its card went up, leaves no card behind: the card would carry the old
// epoch, so that no answer could approve it, and, left to time out,
// would start the run's cooldown. The request is decided again, under
// the vault's new state.
func TestNoCardAfterALockThatFollowedTheRead(t *testing.T) {
	w := newWorld(t)
	w.mu.Lock()
	w.atVault = func() {
		w.setVault(true, 8)
		w.e.EpochChanged(true)
	}
	w.mu.Unlock()
	if d := w.e.Decide(context.Background(), w.req(13)); d.Allow || d.Reason != audit.ReasonVaultLocked {
		t.Fatalf("a request whose vault locked before its card went up: allowed %v, %s (card %q), want refused as %s", d.Allow, d.Reason, d.Card, audit.ReasonVaultLocked)
	}
	w.setVault(false, 9)
	w.e.EpochChanged(false)
	ch := w.decide(w.req(13)) // not in a cooldown: its card goes up
	w.answer(w.card().ID, VerdictOnce, 30)
	if d := got(t, ch); !d.Allow {
		t.Fatalf("after the unlock: allowed %v, %s", d.Allow, d.Reason)
	}
}
