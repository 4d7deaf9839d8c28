package approvals

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/postern/postern/internal/procid"
)

// The display context is the user's to write: a program of theirs that
// names in it a process "postern run" did not launch (an ancestor of
// its own: the login shell, the service manager of every program of
// the user) gets no run of that process served again after a restart,
// so no card offers the person to approve it "again", which would
// cover every program under it.
func TestRestoreServesOnlyWhatPosternRunLaunched(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pid    int
		setup  func(w *world)
		served bool
	}{
		{"the run's own process", 10, nil, true},
		{"a login shell, child of init", 40, func(w *world) {
			w.f.Set(40, 1, 400, w.f.Exe("bash", "a shell"), "-bash")
		}, false},
		{"a shell under the run's process", 11, nil, false},
		{"a child of another program's run command", 42, func(w *world) {
			w.f.Set(41, 1, 410, w.f.Exe("npm", "npm"), "npm", "run", "agent")
			w.f.Set(42, 41, 420, w.f.Exe("sh", "sh"), "sh", "-c", "agent")
		}, false},
		{"a child of postern, not of postern run", 44, func(w *world) {
			postern, _ := w.f.Table.Inspect(5)
			w.f.Set(43, 1, 430, postern.Exe.Path, "postern", "agent", "bash")
			w.f.Set(44, 43, 440, w.f.Exe("bash", "a shell"), "bash")
		}, false},
		{"a child of another user's postern run", 46, func(w *world) {
			postern, _ := w.f.Table.Inspect(5)
			w.f.Set(45, 1, 450, postern.Exe.Path, "postern", "run", "--", "bash")
			os.WriteFile(filepath.Join(w.f.Root, "45", "status"), []byte("Name:\tx\nUid:\t1001\t1001\t1001\t1001\n"), 0o644)
			w.f.Set(46, 45, 460, w.f.Exe("bash", "a shell"), "bash")
		}, false},
		{"a process older than the postern run its parent pid now names", 48, func(w *world) {
			postern, _ := w.f.Table.Inspect(5)
			w.f.Set(47, 1, 480, postern.Exe.Path, "postern", "run", "--", "bash")
			w.f.Set(48, 47, 470, w.f.Exe("bash", "a shell"), "bash")
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			if tc.setup != nil {
				tc.setup(w)
			}
			w.launch("agent", 10)
			w.e.Stop()
			past, err := loadPast(w.cfg.ContextFile)
			if err != nil || len(past) != 1 {
				t.Fatalf("display context: %v %+v", err, past)
			}
			// The entry, rewritten to name pid tc.pid as the kernel
			// shows it.
			target := w.f.Peer(tc.pid)
			past[0].PID, past[0].Start, past[0].Layout = target.PID, target.StartTicks, target.Layout
			past[0].ExeDev, past[0].ExeIno = target.Exe.Dev, target.Exe.Ino
			if err := savePast(w.cfg.ContextFile, past); err != nil {
				t.Fatal(err)
			}
			cfg2 := w.cfg
			cfg2.BootID = "boot-2"
			restored := NewEngine(cfg2).Restore()
			if served := len(restored) == 1; served != tc.served {
				t.Fatalf("pid %d served again: %v, want %v", tc.pid, served, tc.served)
			}
		})
	}
}

// A restore that cannot read a run's launcher for want of descriptors
// or memory keeps the run for a later restore, as one that cannot pin
// the run's process does, rather than forget a live run for good.
func TestRestoreShortOfResourcesForgetsNoRun(t *testing.T) {
	w := newWorld(t)
	w.launch("agent", 10)
	w.e.Stop()
	defer func(f func(*Engine, int) (procid.Process, error)) { inspectLauncher = f }(inspectLauncher)
	inspectLauncher = func(*Engine, int) (procid.Process, error) {
		return procid.Process{}, fmt.Errorf("pid 5: %w", procid.ErrNoResources)
	}
	cfg2 := w.cfg
	cfg2.BootID = "boot-2"
	e2 := NewEngine(cfg2)
	if restored := e2.Restore(); len(restored) != 0 {
		t.Fatalf("restored %d runs whose launcher could not be read", len(restored))
	}
	e2.Stop() // writes the display context as it kept it
	inspectLauncher = func(e *Engine, pid int) (procid.Process, error) { return e.procs.Inspect(pid) }
	cfg2.BootID = "boot-3"
	if restored := NewEngine(cfg2).Restore(); len(restored) != 1 {
		t.Fatalf("after a restore short of descriptors, the next restores %d runs, want the live one", len(restored))
	}
}
