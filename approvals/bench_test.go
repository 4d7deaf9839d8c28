package approvals

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/knownhosts"
	"github.com/postern/postern/internal/procid"
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
	time.Sleep(50 * time.Millisecond) // let it exec
	requester, err := procid.Host.Pin(child.Process.Pid)
	if err != nil {
		b.Fatal(err)
	}
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

// BenchmarkCardToApprover measures the time from a request that needs a
// person to the moment an approver waiting on the gateway sees its card.
func BenchmarkCardToApprover(b *testing.B) {
	self, err := procid.Host.Pin(os.Getpid())
	if err != nil {
		b.Fatal(err)
	}
	e := NewEngine(Config{
		Procs: procid.Host, Log: slog.New(slog.DiscardHandler), BootID: "b", Vault: func() (bool, uint64) { return false, 1 },
		Policy: &Policy{Mode: audit.ModePerCall, CardTimeout: 10 * time.Second, Hosts: knownhosts.Open(nil), Scope: ScopeKey},
	})
	r := &Request{Requester: self, Channel: Channel{Kind: ChannelAgent}, Key: Key{Fingerprint: "SHA256:k"}, Purpose: PurposeOther}
	var worst time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, v := e.Cards()
		start := time.Now()
		done := make(chan Decision, 1)
		go func() { done <- e.Decide(context.Background(), r) }()
		var cards []CardView
		for len(cards) == 0 {
			e.WaitCards(context.Background(), v)
			cards, v = e.Cards()
		}
		if d := time.Since(start); d > worst {
			worst = d
		}
		b.StopTimer()
		e.Answer(cards[0].ID, Answer{Verdict: VerdictDeny, Approver: "bench"}, nil)
		<-done
		b.StartTimer()
	}
	b.ReportMetric(float64(worst.Microseconds()), "worst-µs")
}
