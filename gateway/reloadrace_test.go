package gateway

import (
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/config"
)

// A program that rewrites the configuration file while the gateway reads
// it cannot have one file judged and another put in force: the bytes the
// gateway approves are the bytes it parsed. Here the file flips, as fast
// as renames go, between the approved configuration and one that loosens
// it, while the gateway reads it again and again (as on SIGHUP, which
// such a program can send); the loosening one must never be in force
// without its card.
func TestReloadJudgesTheBytesItPuts(t *testing.T) {
	const approved = "approval = \"per-call\"\n"
	const loose = "approval = \"none\"\n"
	var cfg string
	g, _ := startGatewayWith(t, func(dir string) {
		cfg = configFile(t, dir)
		os.WriteFile(cfg, []byte(approved), 0o600)
	})
	waitStatus(t, g, "at start", approvalIs("per-call"))
	dir := filepath.Dir(cfg)
	for i, s := range []string{approved, loose} {
		if err := os.WriteFile(filepath.Join(dir, "v"+string(rune('0'+i))), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			// A copy renamed over the file: each flip is whole.
			src, _ := os.ReadFile(filepath.Join(dir, "v"+string(rune('0'+i%2))))
			tmp := filepath.Join(dir, "tmp")
			os.WriteFile(tmp, src, 0o600)
			os.Rename(tmp, cfg)
		}
	}()
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		// As SIGHUP has it read, which that program can send too.
		g.reloadConfig()
		// The loosening file may be the one in the gateway's hands only
		// while its card waits (the approved policy then still counts).
		g.mu.Lock()
		approval, pending, approvedRaw := g.config.Approval, g.pending, string(g.approvedRaw)
		g.mu.Unlock()
		if approval == string(audit.ModeNone) && pending == nil || approvedRaw != approved {
			close(stop)
			<-done
			t.Fatalf("a loosening configuration taken without its card: approval %q, no card pending: %v, approved %q", approval, pending == nil, approvedRaw)
		}
	}
	close(stop)
	<-done
}

// Two reloads at once (the watcher's, after a person saved a stricter
// file, and one a program asks for with SIGHUP just before, having
// written a looser file) must leave in force what the gateway says is in
// force: the policy status shows is the policy requests are decided by.
// A reload that read the looser file must not put its policy in force
// after the stricter file was approved and put in force.
func TestConcurrentReloadsAgree(t *testing.T) {
	const (
		approved = "approval = \"session\"\n"
		loose    = "approval = \"none\"\n"
		tight    = "approval = \"per-call\"\n"
	)
	dir := gatewayHome(t)
	cfg := configFile(t, dir)
	if err := os.WriteFile(cfg, []byte(approved), 0o600); err != nil {
		t.Fatal(err)
	}
	// Not started: no watcher reloads behind the test's back.
	g, err := New(Options{Socket: filepath.Join(dir, "xdg_runtime_dir", "agent.sock")})
	if err != nil {
		t.Fatal(err)
	}
	write := func(s string) {
		tmp := cfg + ".tmp"
		os.WriteFile(tmp, []byte(s), 0o600)
		os.Rename(tmp, cfg)
	}
	deadline := time.Now().Add(3 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		// The approved configuration, in force, and no card.
		g.engine.WithdrawPolicy(audit.ReasonPolicyReplaced)
		write(approved)
		a, _ := config.Parse("approved", []byte(approved))
		pol, _ := approvals.Compile(a)
		g.mu.Lock()
		g.config, g.approved, g.approvedRaw, g.pending, g.pendingRaw = a, a, []byte(approved), nil, nil
		g.mu.Unlock()
		g.engine.SetPolicy(pol)

		write(loose)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); g.reloadConfig() }()
		for range i % 64 {
			runtime.Gosched()
		}
		write(tight)
		go func() { defer wg.Done(); g.reloadConfig() }()
		wg.Wait()

		g.mu.Lock()
		shown, pending := g.config.Approval, g.pending
		g.mu.Unlock()
		if inForce := string(g.engine.Policy().Mode); inForce != shown {
			t.Fatalf("round %d: the gateway says approval %q is in force (card pending: %v), but requests are decided by approval %q", i, shown, pending != nil, inForce)
		}
	}
}
