package approvals

import (
	"fmt"
	"testing"

	"github.com/postern/postern/audit"
)

// manyRuns is more live runs than the display context keeps of ended
// sessions, and fewer than the gateway keeps at once.
const manyRuns = maxPast + 6

// launchMany launches n runs of claude, children of postern run (pid 5),
// at pids from first.
func (w *world) launchMany(first, n int) []*Run {
	claude, _ := w.f.Table.Inspect(10)
	var runs []*Run
	for i := range n {
		pid := first + i
		w.f.Set(pid, 5, uint64(10000+pid), claude.Exe.Path, "claude")
		runs = append(runs, w.launch(fmt.Sprint("agent ", i), pid))
	}
	return runs
}

// restartEngine starts another gateway's engine over w's state, as boot,
// and returns the runs it serves again.
func (w *world) restartEngine(boot string) (*Engine, []*Run) {
	cfg := w.cfg
	cfg.BootID = boot
	e := NewEngine(cfg)
	return e, e.Restore()
}

// Every run alive when the gateway stops is served again by the next
// one, however many there are: the bound on the display context's ended
// sessions is no bound on the runs to serve again.
func TestEveryLiveRunIsRestoredAfterARestart(t *testing.T) {
	w := newWorld(t)
	w.launchMany(100, manyRuns)
	w.e.Stop()
	if _, rs := w.restartEngine("boot-2"); len(rs) != manyRuns {
		t.Fatalf("after a restart %d of %d live runs are served again", len(rs), manyRuns)
	}
}

// A run served again after a restart is served again after the next,
// though that gateway was killed, however many other sessions ended
// meanwhile.
func TestRestoredRunOutlivesOtherSessionsEndingBeforeAKill(t *testing.T) {
	w := newWorld(t)
	w.launch("agent", 10)
	w.e.Stop()
	e2, rs := w.restartEngine("boot-2")
	if len(rs) != 1 {
		t.Fatalf("restored %d runs", len(rs))
	}
	w.e = e2
	for _, r := range w.launchMany(100, manyRuns) {
		e2.EndRun(r.ID, audit.ReasonProcessExited)
	}
	// boot-2 is killed: it never stops.
	if _, rs := w.restartEngine("boot-3"); len(rs) != 1 || rs[0].Process.PID != 10 {
		t.Fatalf("after %d other runs ended and the gateway was killed, the live run 10 is not served again (%d runs restored)", manyRuns, len(rs))
	}
}

// A run started under a gateway that is then killed (kill -9, the OOM
// killer: it never stops) is served again by the next gateway, as one
// that stopped would have it.
func TestRunOfAKilledGatewayIsRestored(t *testing.T) {
	w := newWorld(t)
	w.launch("agent", 10)
	// Killed: no Stop.
	e2, rs := w.restartEngine("boot-2")
	if len(rs) != 1 || rs[0].Process.PID != 10 || rs[0].PrevBoot != "boot-1" {
		t.Fatalf("after the gateway that registered it was killed, the live run 10 is not served again (%d runs restored)", len(rs))
	}
	// It ended under boot-2, which stops: it is not served again.
	e2.EndRun(rs[0].ID, audit.ReasonProcessExited)
	e2.Stop()
	if _, rs := w.restartEngine("boot-3"); len(rs) != 0 {
		t.Fatalf("a run that ended was served again after a later restart, as run %s of boot %s", rs[0].ID, rs[0].PrevBoot)
	}
}
