package journal

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A crash after Start leaves an entry with no outcome; the next instance
// records it unknown, and an identical command is refused.
func TestRestartAfterCrash(t *testing.T) {
	if os.Getenv("JOURNAL_CRASH_HELPER") != "" {
		crashHelper()
		return
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "journal.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestRestartAfterCrash$")
	cmd.Env = append(os.Environ(), "JOURNAL_CRASH_HELPER="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 200)
	n, _ := out.Read(buf)
	ids := strings.Fields(string(buf[:n]))
	if len(ids) != 3 {
		t.Fatalf("helper said %q", buf[:n])
	}
	cmd.Process.Kill() // SIGKILL: no Close, no deferred anything
	cmd.Wait()

	j := openTest(t, path, "inst-B")
	intent, dispatched, ended := ids[0], ids[1], ids[2]
	for id, want := range map[string]string{intent: PhaseIntent, dispatched: PhaseDispatched} {
		e, err := j.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		if e.Status() != StatusUnknown || e.Unknown.Reason != ReasonBastionRestarted || e.Unknown.LastPhase != want {
			t.Fatalf("%s after restart: %s %+v", id, e.Status(), e.Unknown)
		}
	}
	if e, _ := j.Get(ended); e.Status() != StatusCompleted {
		t.Fatalf("completed entry became %s", e.Status())
	}
	err = j.Start(newEntry("crash-test dispatched"))
	if !errors.Is(err, ErrUnresolved) {
		t.Fatalf("identical retry after restart: %v", err)
	}
	if l, _ := j.List(ListOptions{Status: "unknown"}); len(l) != 2 {
		t.Fatalf("List unknown = %d entries", len(l))
	}
}

func crashHelper() {
	j, err := Open(os.Getenv("JOURNAL_CRASH_HELPER"), "inst-A")
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	a := newEntry("crash-test intent")
	b := newEntry("crash-test dispatched")
	c := newEntry("crash-test ended")
	for _, e := range []*Entry{a, b, c} {
		if err := j.Start(e); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
	}
	j.Dispatched(b.ID)
	j.Dispatched(c.ID)
	j.End(c.ID, End{Outcome: OutcomeExited})
	fmt.Println(a.ID, b.ID, c.ID)
	time.Sleep(time.Minute)
	os.Exit(0)
}

func TestSameInstanceKeepsRunning(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	j, err := Open(path, "inst")
	if err != nil {
		t.Fatal(err)
	}
	e := mustStart(t, j, newEntry("sleep 100"))
	j.Close()
	j = openTest(t, path, "inst")
	if g, _ := j.Get(e.ID); g.Status() != StatusRunning {
		t.Fatalf("reopening with the same instance changed the entry to %s", g.Status())
	}
	if _, err := j.End(e.ID, End{Outcome: OutcomeExited}); err != nil {
		t.Fatal(err)
	}
}

func TestLocking(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	j := openTest(t, path, "inst")
	mustStart(t, j, newEntry("ls"))

	start := time.Now()
	_, err := open(path, "other", options{timeout: 200 * time.Millisecond})
	if !errors.Is(err, ErrBusy) || time.Since(start) > 2*time.Second {
		t.Fatalf("second Open: %v after %v", err, time.Since(start))
	}
	start = time.Now()
	_, err = OpenReadOnly(path)
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "held by a running gateway") {
		t.Fatalf("OpenReadOnly while held: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("OpenReadOnly took %v", d)
	}
}
