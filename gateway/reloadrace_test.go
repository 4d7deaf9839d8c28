package gateway

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/postern/postern/audit"
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
