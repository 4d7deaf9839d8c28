package journal

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func openTest(t testing.TB, path, instance string) *Journal {
	t.Helper()
	j, err := Open(path, instance)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

func newEntry(cmd string) *Entry {
	return &Entry{
		BootID:       "boot-1",
		Run:          "run-1",
		Conn:         "conn-1",
		Requester:    "ssh (4121) ← bash ← claude (3988)",
		RequesterPID: 4121,
		Target:       Target{User: "deploy", Host: "prod-db-1", Port: 22, HostKey: "SHA256:abc"},
		Kind:         KindExec,
		Command:      []byte(cmd),
		Approval:     "card 7: approved once by alice",
	}
}

// walkPages is checkPageGraph on the file at path.
func walkPages(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return checkPageGraph(f, path)
}

func mustStart(t testing.TB, j *Journal, e *Entry) *Entry {
	t.Helper()
	if err := j.Start(e); err != nil {
		t.Fatalf("Start: %v", err)
	}
	return e
}

func TestLifecycle(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "journal.db")
	j := openTest(t, path, "inst-A")

	e := mustStart(t, j, newEntry("systemctl restart app"))
	if !ValidID(e.ID) || e.Instance != "inst-A" || e.Started.IsZero() {
		t.Fatalf("Start did not fill in the entry: %+v", e)
	}
	if want := fmt.Sprintf("%x", sha256.Sum256([]byte("systemctl restart app"))); e.CommandSHA256 != want {
		t.Fatalf("CommandSHA256 = %s, want %s", e.CommandSHA256, want)
	}
	if got := e.Status(); got != StatusRunning {
		t.Fatalf("status after Start = %q", got)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("journal file mode: %v %v", fi.Mode(), err)
	}
	if fi, _ := os.Stat(filepath.Dir(path)); fi.Mode().Perm() != 0o700 {
		t.Fatalf("journal directory mode %v", fi.Mode())
	}

	if _, err := j.Dispatched(e.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Dispatched(e.ID); !errors.Is(err, ErrTransition) {
		t.Fatalf("second Dispatched: %v", err)
	}
	got, err := j.End(e.ID, End{Outcome: OutcomeExited, ExitStatus: 3, BytesOut: 10, OutputTail: bytes.Repeat([]byte{0xff, 'x'}, 3000)})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status() != StatusCompleted || got.End.ExitStatus != 3 || len(got.End.OutputTail) != MaxOutputTail {
		t.Fatalf("after End: %s %+v", got.Status(), got.End)
	}

	if _, err := j.End(e.ID, End{Outcome: OutcomeExited}); !errors.Is(err, ErrTransition) {
		t.Fatalf("second End: %v", err)
	}
	if _, err := j.MarkUnknown(e.ID, Unknown{Reason: ReasonUpstreamLost}); !errors.Is(err, ErrTransition) {
		t.Fatalf("MarkUnknown after End: %v", err)
	}
	if _, err := j.Resolve(e.ID, Resolution{By: ByUser, Result: ResultRan}); !errors.Is(err, ErrTransition) {
		t.Fatalf("Resolve after End: %v", err)
	}

	// Get by id, by prefix in any case, and the errors.
	for _, q := range []string{e.ID, e.ID[:10], strings.ToLower(e.ID[:8])} {
		g, err := j.Get(q)
		if err != nil || g.ID != e.ID || g.Status() != StatusCompleted {
			t.Fatalf("Get(%q) = %v, %v", q, g, err)
		}
	}
	if _, err := j.Get(e.ID[:5]); err == nil || !strings.Contains(err.Error(), "too short") {
		t.Fatalf("Get with 5 characters: %v", err)
	}
	if _, err := j.Get("7ZZZZZZZZZ"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of a missing id: %v", err)
	}
	e2 := mustStart(t, j, newEntry("true"))
	common := 0
	for common < idLen && e.ID[common] == e2.ID[common] {
		common++
	}
	if common >= MinPrefix {
		if _, err := j.Get(e.ID[:common]); err == nil || !strings.Contains(err.Error(), "ambiguous") {
			t.Fatalf("Get of a shared prefix: %v", err)
		}
	}
}

func TestNotDispatchedOutcomes(t *testing.T) {
	j := openTest(t, filepath.Join(t.TempDir(), "journal.db"), "inst")
	for _, outcome := range []string{OutcomeRejected, OutcomeDenied, OutcomeFailedToStart} {
		e := mustStart(t, j, newEntry("rm -rf /srv/cache "+outcome))
		got, err := j.End(e.ID, End{Outcome: outcome, ErrorMsg: "no"})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status() != StatusRetrySafe {
			t.Errorf("%s: status %q", outcome, got.Status())
		}

		// After the upstream accepted the request, "nothing ran" is a
		// contradiction the journal refuses.
		e = mustStart(t, j, newEntry("rm -rf /srv/cache again "+outcome))
		if _, err := j.Dispatched(e.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := j.End(e.ID, End{Outcome: outcome}); err == nil {
			t.Errorf("%s after Dispatched was accepted", outcome)
		}
	}
	e := mustStart(t, j, newEntry("x"))
	if _, err := j.End(e.ID, End{Outcome: "exploded"}); err == nil {
		t.Error("unknown outcome accepted")
	}
	if _, err := j.End(e.ID, End{Outcome: OutcomeSignaled}); err == nil {
		t.Error("signaled without a signal accepted")
	}
	if _, err := j.End(e.ID, End{Outcome: OutcomeSignaled, Signal: "TERM"}); err != nil {
		t.Error(err)
	}
}

func TestStartValidation(t *testing.T) {
	j := openTest(t, filepath.Join(t.TempDir(), "journal.db"), "inst")
	bad := map[string]func(e *Entry){
		"kind":       func(e *Entry) { e.Kind = "x11" },
		"no user":    func(e *Entry) { e.Target.User = "" },
		"port 0":     func(e *Entry) { e.Target.Port = 0 },
		"big port":   func(e *Entry) { e.Target.Port = 70000 },
		"bad id":     func(e *Entry) { e.ID = "../../etc" },
		"bad hash":   func(e *Entry) { e.CommandSHA256 = strings.Repeat("0", 64) },
		"has end":    func(e *Entry) { e.End = &End{} },
		"dispatched": func(e *Entry) { e.Dispatched = time.Now() },
		"too long":   func(e *Entry) { e.Command = make([]byte, MaxCommand+1) },
		"retry id":   func(e *Entry) { e.RetryOf = "nope" },
	}
	for name, mod := range bad {
		e := newEntry("ls")
		mod(e)
		if err := j.Start(e); err == nil {
			t.Errorf("%s: Start accepted %+v", name, e)
		}
	}
	e := newEntry("ls")
	e.ID = NewID()
	mustStart(t, j, e)
	dup := newEntry("ls -l")
	dup.ID = e.ID
	if err := j.Start(dup); err == nil {
		t.Error("Start accepted an id already in the journal")
	}
	long := newEntry("ls")
	long.Requester = strings.Repeat("é", MaxText)
	mustStart(t, j, long)
	if len(long.Requester) > MaxText || !strings.HasSuffix(long.Requester, "…") {
		t.Errorf("long requester kept as %d bytes", len(long.Requester))
	}
}

func TestUnknownAndResolve(t *testing.T) {
	j := openTest(t, filepath.Join(t.TempDir(), "journal.db"), "inst")
	e := mustStart(t, j, newEntry("deploy.sh"))
	if _, err := j.Resolve(e.ID, Resolution{By: ByUser, Result: ResultRan}); !errors.Is(err, ErrTransition) {
		t.Fatalf("Resolve of a running entry: %v", err)
	}
	if _, err := j.Dispatched(e.ID); err != nil {
		t.Fatal(err)
	}
	u, err := j.MarkUnknown(e.ID, Unknown{Reason: ReasonUpstreamLost, Detail: "read tcp: connection reset", LastPhase: PhaseIntent})
	if err != nil {
		t.Fatal(err)
	}
	if u.Status() != StatusUnknown || u.Unknown.LastPhase != PhaseDispatched {
		t.Fatalf("after MarkUnknown: %s, phase %s", u.Status(), u.Unknown.LastPhase)
	}
	if _, err := j.End(e.ID, End{Outcome: OutcomeExited}); !errors.Is(err, ErrTransition) || !strings.Contains(err.Error(), "Resolve") {
		t.Fatalf("End after MarkUnknown: %v", err)
	}
	if _, err := j.MarkUnknown(e.ID, Unknown{Reason: ReasonUpstreamLost}); !errors.Is(err, ErrTransition) {
		t.Fatalf("second MarkUnknown: %v", err)
	}
	// No markers: a probe cannot resolve it.
	if _, err := j.Resolve(e.ID, Resolution{By: ByProbe, Result: ResultNotStarted}); !errors.Is(err, ErrTransition) {
		t.Fatalf("probe resolution without markers: %v", err)
	}
	if _, err := j.Resolve(e.ID, Resolution{By: ByUser, Result: ResultStillRunning, ExitStatus: new(int)}); err == nil {
		t.Fatal("exit status with still_running accepted")
	}
	if _, err := j.Resolve(e.ID, Resolution{By: "oracle", Result: ResultRan}); err == nil {
		t.Fatal("resolution by oracle accepted")
	}

	steps := []struct {
		r    Resolution
		want string
	}{
		{Resolution{By: ByUser, Result: ResultInconclusive, Evidence: "host unreachable"}, StatusUnknown},
		{Resolution{By: ByUser, Result: ResultRan, ExitStatus: ptr(0), Evidence: "app restarted at 10:02 per its log"}, StatusCompleted},
		{Resolution{By: ByUser, Result: ResultStillRunning}, StatusUnknown},
		{Resolution{By: ByUser, Result: ResultNotStarted, Evidence: strings.Repeat("x", MaxEvidence+100)}, StatusRetrySafe},
	}
	for i, s := range steps {
		got, err := j.Resolve(e.ID, s.r)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status() != s.want || len(got.Resolutions) != i+1 {
			t.Fatalf("step %d: status %q with %d resolutions, want %q", i, got.Status(), len(got.Resolutions), s.want)
		}
		// The retry guard follows the status.
		blocking, err := j.Unresolved(e.Target, e.Kind, e.CommandSHA256)
		if err != nil {
			t.Fatal(err)
		}
		if (blocking != nil) != (s.want == StatusUnknown) {
			t.Fatalf("step %d: Unresolved = %v with status %s", i, blocking, s.want)
		}
	}
	got, _ := j.Get(e.ID)
	if n := len(got.Resolutions[3].Evidence); n > MaxEvidence {
		t.Fatalf("evidence kept at %d bytes", n)
	}
	if got.Resolutions[1].ExitStatus == nil || *got.Resolutions[1].ExitStatus != 0 || got.Resolutions[0].Evidence != "host unreachable" {
		t.Fatalf("resolutions not kept: %+v", got.Resolutions)
	}
	// A resolution arrives without a time (a probe's does): Resolve
	// stamps it, and a stored one without a time does not validate.
	for i, r := range got.Resolutions {
		if r.At.IsZero() {
			t.Fatalf("resolution %d kept without a time", i)
		}
	}
	if err := (&Resolution{By: ByProbe, Result: ResultNotStarted}).validate(); err == nil {
		t.Fatal("a resolution with no time validated")
	}
}

func TestReadOnly(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "journal.db")
	if _, err := OpenReadOnly(path); !errors.Is(err, ErrNoJournal) {
		t.Fatalf("OpenReadOnly of a missing file: %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("OpenReadOnly created the file")
	}

	j, err := Open(path, "inst")
	if err != nil {
		t.Fatal(err)
	}
	running := mustStart(t, j, newEntry("sleep 100"))
	done := mustStart(t, j, newEntry("true"))
	j.End(done.ID, End{Outcome: OutcomeExited})
	j.Close()

	r, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	g, err := r.Get(running.ID)
	if err != nil {
		t.Fatal(err)
	}
	if g.Status() != StatusUnknown || g.Unknown.Reason != ReasonBastionNotRunning {
		t.Fatalf("a running entry read without a bastion: %s %+v", g.Status(), g.Unknown)
	}
	if l, _ := r.List(ListOptions{}); len(l) != 2 || l[0].ID != done.ID {
		t.Fatalf("List = %v", l)
	}
	if err := r.Start(newEntry("x")); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Start on a read-only journal: %v", err)
	}
	if _, err := r.End(running.ID, End{Outcome: OutcomeExited}); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("End on a read-only journal: %v", err)
	}
	if _, ok := <-r.Follow(context.Background()); ok {
		t.Fatal("Follow on a read-only journal delivered something")
	}
	// Two readers share the file.
	r2, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	r2.Close()
}

func TestConcurrentCommands(t *testing.T) {
	j := openTest(t, filepath.Join(t.TempDir(), "journal.db"), "inst")
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := newEntry(fmt.Sprint("job ", i))
			if err := j.Start(e); err != nil {
				errs <- err
				return
			}
			if _, err := j.Dispatched(e.ID); err != nil {
				errs <- err
				return
			}
			if _, err := j.End(e.ID, End{Outcome: OutcomeExited, ExitStatus: i}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	l, _ := j.List(ListOptions{Status: "completed"})
	if len(l) != 50 {
		t.Fatalf("%d of 50 commands journaled", len(l))
	}
}

// A group commit in which one change is refused still commits the others.
func TestGroupWithRefusedChange(t *testing.T) {
	j := openTest(t, filepath.Join(t.TempDir(), "journal.db"), "inst")
	e := mustStart(t, j, newEntry("ls"))
	var wg sync.WaitGroup
	results := make([]error, 20)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, results[i] = j.End(e.ID, End{Outcome: OutcomeExited, ExitStatus: i})
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range results {
		if err == nil {
			ok++
		} else if !errors.Is(err, ErrTransition) {
			t.Fatal(err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d concurrent Ends succeeded, want exactly 1", ok)
	}
}
