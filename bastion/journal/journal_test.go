package journal

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
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

func ptr[T any](v T) *T { return &v }

// olderJournal returns a journal file holding e, lost (its outcome
// unknown), as an older postern left it: guard in meta ("" for none) and
// an unresolved index keyed by the parts keyOf gives of e.
func olderJournal(t *testing.T, e *Entry, guard string, keyOf func(u *Entry) []string) (path string, u *Entry) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "journal.db")
	j, err := Open(path, "old")
	if err != nil {
		t.Fatal(err)
	}
	u = lose(t, j, e)
	j.Close()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		err := meta.Delete(keyGuard)
		if guard != "" {
			err = meta.Put(keyGuard, []byte(guard))
		}
		if err != nil {
			return err
		}
		tx.DeleteBucket(bucketUnresolved)
		b, _ := tx.CreateBucket(bucketUnresolved)
		h := sha256.New()
		for _, s := range keyOf(u) {
			fmt.Fprintf(h, "%d:%s;", len(s), s)
		}
		return b.Put(append([]byte(fmt.Sprintf("%x", h.Sum(nil))), u.ID...), []byte{})
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	return path, u
}

// A journal whose unresolved index an older postern keyed by host name
// is re-keyed by host key when it is opened: the unknown entry still
// guards, under any name of its host.
func TestRetryGuardIndexFromOlderJournal(t *testing.T) {
	// No "guard" mark, and the index keyed by the lower-cased host name.
	path, u := olderJournal(t, newEntry("make deploy"), "", func(u *Entry) []string {
		return []string{"prod-db-1", "deploy", "22", KindExec, u.CommandSHA256}
	})
	j := openTest(t, path, "new")
	again := newEntry("make deploy")
	again.Target.Host = "localhost"
	var ue *UnresolvedError
	if err := j.Start(again); !errors.As(err, &ue) || ue.Entry.ID != u.ID {
		t.Fatalf("Start after the upgrade: %v", err)
	}
	var keys int
	j.view(func(tx *bolt.Tx) error { keys = tx.Bucket(bucketUnresolved).Stats().KeyN; return nil })
	if keys != 1 {
		t.Fatalf("the index holds %d keys, want 1", keys)
	}
}

// An index an older postern keyed by host key and port is rebuilt, and
// the identical command on the same host key through another port is
// refused.
func TestRetryGuardIndexKeyedByPort(t *testing.T) {
	path, u := olderJournal(t, newEntry("make deploy"), "host-key", func(u *Entry) []string {
		return []string{"key:" + u.Target.HostKey, "deploy", "22", KindExec, u.CommandSHA256}
	})
	j := openTest(t, path, "new")
	for _, port := range []int{22, 2222} {
		again := newEntry("make deploy")
		again.Target.Host, again.Target.Port = "127.0.0.1", port
		var ue *UnresolvedError
		if err := j.Start(again); !errors.As(err, &ue) || ue.Entry.ID != u.ID {
			t.Fatalf("Start through port %d: %v", port, err)
		}
	}
}

// sshd logs user:style in as user (the style picks a BSD
// authentication method): the same account, so the same command, whether
// the unknown one went to it with a style or without. An index made
// before the guard went by the login user is rebuilt at Open.
func TestRetryGuardKnowsTheLoginUser(t *testing.T) {
	styled := newEntry("make deploy")
	styled.Target.User = "deploy:skey"
	path, u := olderJournal(t, styled, "host-key without port", func(u *Entry) []string {
		return []string{"key:" + u.Target.HostKey, "deploy:skey", KindExec, u.CommandSHA256}
	})
	j := openTest(t, path, "new")
	for _, user := range []string{"deploy", "deploy:skey", "deploy:"} {
		again := newEntry("make deploy")
		again.Target.User = user
		var ue *UnresolvedError
		if err := j.Start(again); !errors.As(err, &ue) || ue.Entry.ID != u.ID {
			t.Fatalf("Start as %s after an unknown one as deploy:skey: %v", user, err)
		}
	}
	other := newEntry("make deploy")
	other.Target.User = "deployer"
	mustStart(t, j, other)
}

func TestRetryGuard(t *testing.T) {
	j := openTest(t, filepath.Join(t.TempDir(), "journal.db"), "inst")
	lose := func(e *Entry) *Entry {
		if _, err := j.Dispatched(e.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := j.MarkUnknown(e.ID, Unknown{Reason: ReasonUpstreamLost}); err != nil {
			t.Fatal(err)
		}
		return e
	}
	lost := func(cmd string) *Entry { return lose(mustStart(t, j, newEntry(cmd))) }
	// Two identical commands run at once (nothing is unknown yet), and
	// both lose their connection.
	u := mustStart(t, j, newEntry("psql -c 'update accounts set paid = true'"))
	u2 := mustStart(t, j, newEntry("psql -c 'update accounts set paid = true'"))
	lose(u)

	// The identical command is refused, naming the entry, whatever name
	// the same host (the same verified host key) is reached by.
	again := newEntry("psql -c 'update accounts set paid = true'")
	var ue *UnresolvedError
	for _, name := range []string{"prod-db-1", "PROD-DB-1", "10.0.0.5", "localhost"} {
		again.Target.Host = name
		err := j.Start(again)
		if !errors.As(err, &ue) || !errors.Is(err, ErrUnresolved) || ue.Entry.ID != u.ID {
			t.Fatalf("identical Start on %s: %v", name, err)
		}
	}
	err := j.Start(again)
	if !strings.Contains(err.Error(), u.ID) {
		t.Errorf("error does not name the unknown entry: %v", err)
	}
	if strings.Contains(err.Error(), "postern ") {
		t.Errorf("a library error names a command; the advice belongs to the edge: %v", err)
	}
	if got, err := j.Unresolved(again.Target, KindExec, CommandHash(again.Command)); err != nil || got == nil || got.ID != u.ID {
		t.Fatalf("Unresolved = %v, %v", got, err)
	}

	// A different command, kind, user or host key is not blocked, even
	// under the same host name and port.
	for _, mod := range []func(e *Entry){
		func(e *Entry) { e.Command = append(e.Command, ' ') },
		func(e *Entry) { e.Kind = KindSubsystem },
		func(e *Entry) { e.Target.User = "root" },
		func(e *Entry) { e.Target.HostKey = "SHA256:another-host" },
	} {
		e := newEntry("psql -c 'update accounts set paid = true'")
		mod(e)
		mustStart(t, j, e)
	}

	// A second unknown attempt: the guard names the newest, and a retry
	// must name it too.
	lose(u2)
	if got, _ := j.Unresolved(u.Target, KindExec, u.CommandSHA256); got.ID != u2.ID {
		t.Fatalf("Unresolved = %s, want the newest %s", got.ID, u2.ID)
	}
	r := newEntry("psql -c 'update accounts set paid = true'")
	r.RetryOf = u.ID
	if err := j.Start(r); !errors.As(err, &ue) || ue.Entry.ID != u2.ID {
		t.Fatalf("retry naming the older entry: %v", err)
	}

	// The approved retry runs once, and marks both earlier attempts.
	r = newEntry("psql -c 'update accounts set paid = true'")
	r.RetryOf = u2.ID
	mustStart(t, j, r)
	for _, id := range []string{u.ID, u2.ID} {
		g, _ := j.Get(id)
		if g.RetriedBy != r.ID || g.Status() != StatusUnknown {
			t.Fatalf("%s after the retry: retried_by %q, status %s", id, g.RetriedBy, g.Status())
		}
	}
	r2 := newEntry("psql -c 'update accounts set paid = true'")
	r2.RetryOf = u2.ID
	if err := j.Start(r2); !errors.Is(err, ErrTransition) {
		t.Fatalf("second retry on one approval: %v", err)
	}
	if got, _ := j.Unresolved(u.Target, KindExec, u.CommandSHA256); got != nil {
		t.Fatalf("guard still holds after the approved retry: %s", got.ID)
	}

	// A retry approved for an entry that has since been found to have run
	// is refused: the approval was given without knowing that.
	u3 := lost("make migrate")
	if _, err := j.Resolve(u3.ID, Resolution{By: ByUser, Result: ResultRan}); err != nil {
		t.Fatal(err)
	}
	r3 := newEntry("make migrate")
	r3.RetryOf = u3.ID
	if err := j.Start(r3); !errors.Is(err, ErrTransition) {
		t.Fatalf("retry of a completed entry: %v", err)
	}
	// A retry of a different command is refused.
	r4 := newEntry("make migrate-other")
	r4.RetryOf = u3.ID
	if err := j.Start(r4); err == nil || !strings.Contains(err.Error(), "not the same command") {
		t.Fatalf("retry of another command: %v", err)
	}
	// Once resolved not_started, the command may simply run again.
	u4 := lost("make seed")
	if _, err := j.Resolve(u4.ID, Resolution{By: ByUser, Result: ResultNotStarted}); err != nil {
		t.Fatal(err)
	}
	mustStart(t, j, newEntry("make seed"))
}

// An approval covers one retry: a retry that reached no program on the
// host (the host rejected it, it failed to start, or it was found not to
// have started) ran nothing, and the unknown command it retried guards
// again. The next identical command is refused until a person approves
// another retry, which may then start.
func TestRetryThatRanNothingLeavesTheGuard(t *testing.T) {
	j := openTest(t, filepath.Join(t.TempDir(), "journal.db"), "inst")
	for _, ranNothing := range map[string]func(r *Entry) error{
		"rejected": func(r *Entry) error {
			_, err := j.End(r.ID, End{Outcome: OutcomeRejected})
			return err
		},
		"failed to start": func(r *Entry) error {
			_, err := j.End(r.ID, End{Outcome: OutcomeFailedToStart, ErrorMsg: "the audit log cannot record the command"})
			return err
		},
		"found not started": func(r *Entry) error {
			if _, err := j.MarkUnknown(r.ID, Unknown{Reason: ReasonDispatchUnconfirmed}); err != nil {
				return err
			}
			_, err := j.Resolve(r.ID, Resolution{By: ByUser, Result: ResultNotStarted})
			return err
		},
	} {
		cmd := "make deploy-" + NewID()
		u := lose(t, j, newEntry(cmd))
		r := newEntry(cmd)
		r.RetryOf = u.ID
		mustStart(t, j, r)
		if err := ranNothing(r); err != nil {
			t.Fatal(err)
		}
		var ue *UnresolvedError
		if err := j.Start(newEntry(cmd)); !errors.As(err, &ue) || ue.Entry.ID != u.ID {
			t.Fatalf("an identical command after the approved retry %s ran nothing: %v", r.ID, err)
		}
		again := newEntry(cmd)
		again.RetryOf = u.ID
		mustStart(t, j, again)
		if g, _ := j.Get(u.ID); g.RetriedBy != again.ID || g.Status() != StatusUnknown {
			t.Fatalf("%s after a second approved retry: retried_by %q, status %s", u.ID, g.RetriedBy, g.Status())
		}
		if err := j.Start(newEntry(cmd)); err != nil {
			t.Fatalf("an identical command while the approved retry runs: %v", err)
		}
	}
}

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

func TestList(t *testing.T) {
	j := openTest(t, filepath.Join(t.TempDir(), "journal.db"), "inst")
	var ids []string
	for i := range 6 {
		e := mustStart(t, j, newEntry(fmt.Sprint("cmd ", i)))
		ids = append(ids, e.ID)
		switch i % 3 {
		case 0:
			j.End(e.ID, End{Outcome: OutcomeExited})
		case 1:
			j.MarkUnknown(e.ID, Unknown{Reason: ReasonDispatchUnconfirmed})
		}
	}
	all, err := j.List(ListOptions{})
	if err != nil || len(all) != 6 {
		t.Fatalf("List = %d, %v", len(all), err)
	}
	for i, e := range all {
		if e.ID != ids[5-i] {
			t.Fatalf("List is not newest first")
		}
	}
	for status, n := range map[string]int{"COMPLETED": 2, "running": 2, StatusUnknown: 2, "RETRY_SAFE": 0} {
		l, err := j.List(ListOptions{Status: status})
		if err != nil || len(l) != n {
			t.Errorf("List(%s) = %d, %v", status, len(l), err)
		}
	}
	if l, _ := j.List(ListOptions{Limit: 4}); len(l) != 4 || l[0].ID != ids[5] {
		t.Errorf("List with limit: %d", len(l))
	}
	if l, _ := j.List(ListOptions{Since: time.Now().Add(time.Hour)}); len(l) != 0 {
		t.Errorf("List since the future: %d", len(l))
	}
	if l, _ := j.List(ListOptions{Since: time.Now().Add(-time.Hour)}); len(l) != 6 {
		t.Errorf("List since an hour ago: %d", len(l))
	}
	if _, err := j.List(ListOptions{Status: "finished"}); err == nil {
		t.Error("unknown status accepted")
	}
}

func TestFollow(t *testing.T) {
	j := openTest(t, filepath.Join(t.TempDir(), "journal.db"), "inst")
	ctx, cancel := context.WithCancel(context.Background())
	ch := j.Follow(ctx)
	e := mustStart(t, j, newEntry("ls"))
	j.Dispatched(e.ID)
	j.End(e.ID, End{Outcome: OutcomeExited, ExitStatus: 2})
	for _, want := range []string{"starting", "running", "exited 2"} {
		select {
		case got := <-ch:
			if got.ID != e.ID || got.Describe() != want {
				t.Fatalf("followed %s %q, want %q", got.ID, got.Describe(), want)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no change followed")
		}
	}
	cancel()
	select {
	case _, ok := <-ch:
		if ok {
			t.Fatal("change after cancel")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("stream not closed after cancel")
	}

	// A reader that falls behind is cut off rather than silently skipped.
	slow := j.Follow(context.Background())
	for range FollowBuffer + 1 {
		mustStart(t, j, newEntry("x "+NewID()))
	}
	n := 0
	for range slow {
		n++
	}
	if n != FollowBuffer {
		t.Fatalf("slow reader got %d changes before its stream closed", n)
	}

	// Close ends every stream.
	last := j.Follow(context.Background())
	j.Close()
	if _, ok := <-last; ok {
		t.Fatal("stream open after Close")
	}
	if err := j.Start(newEntry("y")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Start after Close: %v", err)
	}
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

func fileState(t *testing.T, path string) (string, time.Time) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(path)
	return fmt.Sprintf("%x", sha256.Sum256(b)), fi.ModTime()
}

// lose starts e and loses its outcome: it guards against a retry.
func lose(t *testing.T, j *Journal, e *Entry) *Entry {
	t.Helper()
	mustStart(t, j, e)
	j.Dispatched(e.ID)
	if _, err := j.MarkUnknown(e.ID, Unknown{Reason: ReasonUpstreamLost}); err != nil {
		t.Fatal(err)
	}
	return e
}

// A journal that is damaged in any way, cut short included, is refused
// and left exactly as it was: nothing starts over in its place.
func TestDamagedFileUntouched(t *testing.T) {
	cases := map[string]func(t *testing.T, path string){
		"garbage": func(t *testing.T, path string) {
			os.WriteFile(path, bytes.Repeat([]byte("not a database "), 1000), 0o600)
		},
		"short": func(t *testing.T, path string) {
			os.WriteFile(path, []byte("x"), 0o600)
		},
		"truncated to nothing": func(t *testing.T, path string) {
			j, _ := Open(path, "inst")
			lose(t, j, newEntry("make deploy"))
			j.Close()
			os.Truncate(path, 0)
		},
		"truncated halfway": func(t *testing.T, path string) {
			j, _ := Open(path, "inst")
			for i := range 200 {
				lose(t, j, newEntry(fmt.Sprint("command number ", i, strings.Repeat(" pad", 50))))
			}
			j.Close()
			fi, _ := os.Stat(path)
			os.Truncate(path, fi.Size()/2)
		},
		// Shorter than bbolt's two meta pages: its own check says so in an
		// error of its own.
		"cut to one page": func(t *testing.T, path string) {
			j, _ := Open(path, "inst")
			lose(t, j, newEntry("make deploy"))
			j.Close()
			os.Truncate(path, int64(os.Getpagesize()))
		},
		"cut short of two pages": func(t *testing.T, path string) {
			j, _ := Open(path, "inst")
			lose(t, j, newEntry("make deploy"))
			j.Close()
			os.Truncate(path, int64(2*os.Getpagesize()-1))
		},
		"foreign bbolt": func(t *testing.T, path string) {
			db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			db.Update(func(tx *bolt.Tx) error {
				b, _ := tx.CreateBucket([]byte("widgets"))
				return b.Put([]byte("a"), []byte("b"))
			})
			db.Close()
		},
		"bad record": func(t *testing.T, path string) {
			j, err := Open(path, "inst")
			if err != nil {
				t.Fatal(err)
			}
			e := newEntry("ls")
			j.Start(e)
			j.Close()
			db, _ := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
			db.Update(func(tx *bolt.Tx) error {
				return tx.Bucket(bucketEntries).Put([]byte(e.ID), []byte("\x01{\"id\":\"garbage\"}"))
			})
			db.Close()
		},
		"newer format": func(t *testing.T, path string) {
			j, _ := Open(path, "inst")
			j.Close()
			db, _ := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
			db.Update(func(tx *bolt.Tx) error {
				return tx.Bucket(bucketMeta).Put(keyFormat, []byte("postern-journal 2"))
			})
			db.Close()
		},
		"scrambled pages": func(t *testing.T, path string) {
			j, _ := Open(path, "inst")
			for i := range 200 {
				j.Start(newEntry(fmt.Sprint("command number ", i, strings.Repeat(" pad", 50))))
			}
			j.Close()
			b, _ := os.ReadFile(path)
			page := os.Getpagesize()
			for i := 2 * page; i < len(b); i++ {
				b[i] = byte(i*7 + 3)
			}
			os.WriteFile(path, b, 0o600)
		},
	}
	for name, damage := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "journal.db")
			damage(t, path)
			sum, mtime := fileState(t, path)
			time.Sleep(10 * time.Millisecond)
			j, err := Open(path, "inst-new")
			if err == nil {
				j.Close()
				t.Fatal("Open accepted a damaged journal")
			}
			if name == "newer format" {
				if !strings.Contains(err.Error(), "upgrade postern") {
					t.Fatalf("newer format: %v", err)
				}
			} else if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "left as it is") {
				t.Fatalf("Open: %v", err)
			}
			if r, err := OpenReadOnly(path); err == nil {
				_, lerr := r.List(ListOptions{})
				r.Close()
				if lerr == nil && name != "newer format" && name != "foreign bbolt" {
					t.Fatalf("read-only List of a damaged journal succeeded")
				}
			} else if errors.Is(err, ErrNoJournal) {
				t.Fatalf("read-only: a damaged journal reads as no journal: %v", err)
			} else if strings.HasPrefix(name, "cut ") && !errors.Is(err, ErrDamaged) {
				t.Fatalf("read-only: %v", err)
			}
			if s, m := fileState(t, path); s != sum || !m.Equal(mtime) {
				t.Fatal("the damaged file was changed")
			}
			t.Log(err)
		})
	}
}

// Scrambling any one page of a journal either leaves it readable (a free
// page) or is reported as ErrDamaged: by Open when it reads the page, or
// else by the check that runs after it, which then refuses every change.
// Nothing crashes, and the scrambled page is never written over.
func TestEveryPageScrambled(t *testing.T) {
	dir := t.TempDir()
	orig := filepath.Join(dir, "orig.db")
	j, err := Open(orig, "inst")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		e := mustStart(t, j, newEntry(fmt.Sprint("command number ", i, strings.Repeat(" pad", 40))))
		if i%2 == 0 {
			j.End(e.ID, End{Outcome: OutcomeExited, OutputTail: bytes.Repeat([]byte("out"), 300)})
		}
	}
	j.Close()
	good, _ := os.ReadFile(orig)
	page := os.Getpagesize()
	damagedPages := 0
	for p := 2; p*page < len(good); p++ {
		b := append([]byte{}, good...)
		for i := p * page; i < (p+1)*page; i++ {
			b[i] = byte(i*13 + p)
		}
		path := filepath.Join(dir, fmt.Sprintf("p%d.db", p))
		os.WriteFile(path, b, 0o600)
		sum, _ := fileState(t, path)
		j, err := Open(path, "inst-new")
		if err == nil {
			_, lerr := j.List(ListOptions{})
			derr := j.Damaged()
			serr := j.Start(newEntry("after"))
			j.Close()
			switch {
			case derr == nil && lerr != nil:
				t.Errorf("page %d: Open and its check accepted the file, List failed: %v", p, lerr)
			case derr != nil && (!errors.Is(derr, ErrDamaged) || !errors.Is(serr, ErrDamaged)):
				t.Errorf("page %d: damage %v, then Start: %v", p, derr, serr)
			case derr != nil:
				damagedPages++
				after, _ := os.ReadFile(path)
				if !bytes.Equal(after[p*page:(p+1)*page], b[p*page:(p+1)*page]) {
					t.Errorf("page %d: the damaged page was written over", p)
				}
			}
			continue
		}
		if !errors.Is(err, ErrDamaged) {
			t.Errorf("page %d: %v", p, err)
		}
		damagedPages++
		if s, _ := fileState(t, path); s != sum {
			t.Errorf("page %d: the damaged file was changed", p)
		}
	}
	if damagedPages == 0 {
		t.Fatal("no scrambled page was noticed")
	}
	t.Logf("%d of %d pages noticed when scrambled", damagedPages, len(good)/page-2)
}

// List pages through the journal: Before continues after the last entry
// of a page, newest first, with nothing skipped or repeated.
func TestListPages(t *testing.T) {
	j := openTest(t, filepath.Join(t.TempDir(), "journal.db"), "inst")
	var ids []string
	for i := range 7 {
		ids = append(ids, mustStart(t, j, newEntry(fmt.Sprint("command ", i))).ID)
	}
	var got []string
	before := ""
	for {
		page, err := j.List(ListOptions{Limit: 3, Before: before})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page {
			got = append(got, e.ID)
		}
		if len(page) < 3 {
			break
		}
		before = page[len(page)-1].ID
	}
	slices.Reverse(ids)
	if !slices.Equal(got, ids) {
		t.Fatalf("pages gave %v, want %v", got, ids)
	}
}

// A journal may hold entries made while the clock was ahead (a clock set
// wrong, then corrected; a machine restored from a snapshot): entries
// made after the clock went back still sort after them, so that a list,
// newest first, begins with the newest, where it hid them past its limit.
func TestNewEntriesSortLastAfterTheClockWentBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	j := openTest(t, path, "inst-A")
	ahead := newEntry("made while the clock was a day ahead")
	ahead.ID = encodeID(uint64(time.Now().Add(24*time.Hour).UnixMilli()), 0, 7)
	mustStart(t, j, ahead)
	j.Close()

	j = openTest(t, path, "inst-B")
	e := mustStart(t, j, newEntry("made after the clock went back"))
	list, err := j.List(ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != e.ID {
		t.Fatalf("the newest entry %s does not come first: the list begins with %s (%q)", e.ID, list[0].ID, list[0].Command)
	}
	if e2 := mustStart(t, j, newEntry("and the next")); e2.ID <= e.ID {
		t.Fatalf("ids went backwards: %s after %s", e2.ID, e.ID)
	}
}
