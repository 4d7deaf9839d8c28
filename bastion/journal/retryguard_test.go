package journal

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

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
