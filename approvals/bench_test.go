package approvals

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/knownhosts"
	"github.com/postern/postern/internal/procid"
	"github.com/postern/postern/internal/procid/proctest"
)

// BenchmarkDecideCoveredByGrant measures the decision for a request that a
// live grant covers, with the live checks against the real /proc: the
// grant's run still the same process (pidfd, executable), its nonce, the
// boot id, the epoch, and the requester's ancestry back to the run.
func BenchmarkDecideCoveredByGrant(b *testing.B) {
	child := exec.Command("sleep", "600")
	if err := child.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { child.Process.Kill(); child.Wait() }()
	proctest.WaitSleeping(b, child.Process.Pid, "sleep")
	requester, err := procid.Host.Pin(child.Process.Pid)
	if err != nil {
		b.Fatal(err)
	}
	defer requester.Close()
	e := NewEngine(Config{
		Procs: procid.Host, Log: slog.New(slog.DiscardHandler), BootID: "b", Vault: func() (bool, uint64) { return false, 1 },
		Policy: &Policy{Mode: audit.ModeSession, CardTimeout: 10 * time.Second, Hosts: knownhosts.Open(nil), Scope: ScopeKey},
	})
	r := &Request{Requester: requester, Channel: Channel{Kind: ChannelAgent}, Key: Key{Fingerprint: "SHA256:k"}, Purpose: PurposeSSHSig, Namespace: "git"}
	ch := make(chan Decision, 1)
	go func() { ch <- e.Decide(context.Background(), r) }()
	var card CardView
	for card.ID == "" {
		if cards, _ := e.Cards(); len(cards) > 0 {
			card = cards[0]
		}
		time.Sleep(time.Millisecond)
	}
	self := -1
	for i, s := range card.Subjects {
		if s.PID == os.Getpid() {
			self = i
		}
	}
	// The benchmark process itself is the approved run; the sleep it
	// started is the requester.
	if err := e.Answer(card.ID, Answer{Verdict: VerdictSession, Subject: self, Approver: "bench"}, nil); err != nil {
		b.Fatal(err)
	}
	if d := <-ch; !d.Allow {
		b.Fatal(d)
	}
	cpu := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if d := e.Decide(context.Background(), r); d.Reason != "session" {
			b.Fatal(d)
		}
	}
	b.StopTimer()
	// On a shared machine the wall time counts waiting for a CPU; the
	// CPU time spent per decision (user and system) does not.
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
}

// cpuTime returns the CPU time this process has used, in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkCardToApprover measures, inside the engine, the time from a
// request that needs a person to the moment an approver that follows the
// pending cards has its card on its board: the engine shows the card and
// wakes the approver, which takes the change (CardsSince), encoded in
// JSON as the control socket sends it and decoded as the command line
// reads it, and applies it. 100 other cards are pending throughout
// (per-call requests, one card each). The median, the p99 and the worst
// case are reported, and the CPU time of the whole iteration (the card,
// its answer and the approver's update after it), which a busy machine
// does not inflate as it does wall times; internal/e2e's
// BenchmarkCardToConsole measures the same through the gateway's sockets
// to a console's output.
func BenchmarkCardToApprover(b *testing.B) {
	self, err := procid.Host.Pin(os.Getpid())
	if err != nil {
		b.Fatal(err)
	}
	e := NewEngine(Config{
		Procs: procid.Host, Log: slog.New(slog.DiscardHandler), BootID: "b", Vault: func() (bool, uint64) { return false, 1 },
		Policy: &Policy{Mode: audit.ModePerCall, CardTimeout: time.Hour, Hosts: knownhosts.Open(nil), Scope: ScopeKey},
	})
	r := &Request{Requester: self, Channel: Channel{Kind: ChannelAgent}, Key: Key{Fingerprint: "SHA256:k"}, Purpose: PurposeOther}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const pending = 100
	for range pending {
		go e.Decide(ctx, r)
	}
	for {
		if cards, _ := e.Cards(); len(cards) == pending {
			break
		}
		time.Sleep(time.Millisecond)
	}
	var board CardBoard
	follow := func() []CardView {
		d := e.CardsSince(board.Seq())
		js, err := json.Marshal(d)
		if err != nil {
			b.Fatal(err)
		}
		var got CardsDelta
		if err := json.Unmarshal(js, &got); err != nil {
			b.Fatal(err)
		}
		if err := board.Apply(&got); err != nil {
			b.Fatal(err)
		}
		return got.Cards
	}
	follow()
	var took []time.Duration
	cpu := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		done := make(chan Decision, 1)
		go func() { done <- e.Decide(context.Background(), r) }()
		var fresh string
		for fresh == "" {
			e.WaitCards(context.Background(), board.Seq())
			for _, c := range follow() {
				fresh = c.ID
			}
		}
		took = append(took, time.Since(start))
		b.StopTimer()
		e.Answer(fresh, Answer{Verdict: VerdictDeny, Approver: "bench"}, nil)
		<-done
		follow()
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu)/1e3/float64(b.N), "cpu-µs/op")
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds()), "median-µs")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(took[len(took)-1].Microseconds()), "worst-µs")
	b.ReportMetric(pending, "pending-cards")
}

// BenchmarkDecideManyGrants measures a request that a live session grant
// covers while other live grants exist on the same key, each held by
// another run (a process that is not the requester's ancestor): the cost
// must not grow with their number. Two engines, one with the covering
// grant alone and one with 9,999 others besides, decide in alternation so
// that a busy machine slows both alike; the medians and their ratio are
// reported. Configuration: a fake process table (proctest; files laid
// out like /proc), approval = session, scope = key, no audit log. The
// requester (ssh 13) descends from the approved run (claude 10) through
// bash and git; the other runs are children of init.
func BenchmarkDecideManyGrants(b *testing.B) {
	f := proctest.New(b)
	initExe, claude, sh, git, sshExe := f.Exe("init", "init"), f.Exe("claude", "agent"), f.Exe("bash", "shell"), f.Exe("git", "git"), f.Exe("ssh", "ssh")
	f.Set(1, 0, 1, initExe)
	f.Set(10, 1, 100, claude)
	f.Set(11, 10, 110, sh)
	f.Set(12, 11, 120, git)
	f.Set(13, 12, 130, sshExe)
	key := Key{Fingerprint: "SHA256:k"}
	engine := func(n int) *Engine {
		e := NewEngine(Config{
			Procs: f.Table, Log: slog.New(slog.DiscardHandler), BootID: "b", Vault: func() (bool, uint64) { return false, 1 },
			Policy: &Policy{Mode: audit.ModeSession, CardTimeout: 10 * time.Second, Hosts: knownhosts.Open(nil), Scope: ScopeKey},
		})
		grant := func(pid int) {
			p, err := f.Table.Inspect(pid)
			if err != nil {
				b.Fatal(err)
			}
			run, isNew, err := e.register(&Run{Process: p})
			if err != nil {
				b.Fatal(err)
			}
			e.mu.Lock()
			if isNew {
				run = e.keepLocked(run, 1)
			}
			e.addGrantLocked(&Grant{ID: newGrantID(), Run: run, Nonce: run.Nonce, BootID: "b", Epoch: 1, Key: key})
			e.mu.Unlock()
		}
		// The other runs first, so that a walk over all grants would
		// meet them before the covering one.
		for i := 1; i < n; i++ {
			pid := 1000 + i
			f.Set(pid, 1, uint64(pid)*10, claude)
			grant(pid)
		}
		grant(10)
		return e
	}
	one, many := engine(1), engine(10000)
	r := &Request{Requester: f.Peer(13), Channel: Channel{Kind: ChannelAgent}, Key: key, Purpose: PurposeOther}
	decide := func(e *Engine) time.Duration {
		start := time.Now()
		if d := e.Decide(context.Background(), r); d.Reason != audit.ReasonSession {
			b.Fatal(d)
		}
		return time.Since(start)
	}
	t1, tn := make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t1 = append(t1, decide(one))
		tn = append(tn, decide(many))
	}
	m1, mn := median(t1), median(tn)
	b.ReportMetric(float64(m1.Nanoseconds())/1e3, "µs-median-1grant")
	b.ReportMetric(float64(mn.Nanoseconds())/1e3, "µs-median-10000grants")
	b.ReportMetric(float64(mn)/float64(m1), "ratio-10000/1")
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
