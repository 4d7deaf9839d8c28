package audit

import (
	"os"
	"testing"
	"time"
)

// The appender that leads a group commit returns once its own batch is
// durable: the records that came while it wrote are written by one of
// their own appenders, which takes the lead, not by it. (A leader that
// wrote every batch while more came kept its own caller waiting for
// records not its own.)
func TestLeaderReturnsAfterItsBatch(t *testing.T) {
	for _, next := range []string{"Append", "Enter"} {
		t.Run(next, func(t *testing.T) { leaderReturnsAfterItsBatch(t, next) })
	}
}

// leaderReturnsAfterItsBatch is TestLeaderReturnsAfterItsBatch with the
// records that come during the first write appended by next: the lead
// goes to one of their appenders (Append), or to a goroutine of its own
// when they do not wait for it there (Enter).
func leaderReturnsAfterItsBatch(t *testing.T, next string) {
	tl := newTestSetup(t)
	l := tl.open(t)
	syncing, release := make(chan struct{}, 16), make(chan struct{}, 16)
	l.w.syncHook = func(f *os.File) error {
		syncing <- struct{}{}
		<-release
		return datasync(f)
	}
	first := make(chan error, 1)
	go func() { first <- l.Append(ev(EventSign, "R1")) }()
	<-syncing // the first record's batch is being made durable
	const later = 3
	others := make(chan error, later)
	for range later {
		if next == "Append" {
			go func() { others <- l.Append(ev(EventSign, "R2")) }()
			continue
		}
		p := l.Enter(ev(EventSign, "R2"))
		go func() { others <- p.Wait() }()
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		l.w.cmu.Lock()
		n := len(l.w.pending)
		l.w.cmu.Unlock()
		if n == later {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d records wait, want %d", n, later)
		}
		time.Sleep(time.Millisecond)
	}
	release <- struct{}{} // the first batch is durable
	<-syncing             // the next batch is being made durable
	select {
	case err := <-first:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the first appender did not return while the records that came after it were written: it leads their batch too")
	}
	close(release)
	for range later {
		if err := <-others; err != nil {
			t.Fatal(err)
		}
	}
	if signs := closedSignRuns(t, tl, l); len(signs) != 1+later {
		t.Fatalf("%d sign records in the log, want %d", len(signs), 1+later)
	}
}

// Enter writes the record itself when no write is under way, and returns
// with it durable; behind a write under way it returns at once, and Wait
// returns once the next write made the record durable.
func TestEnter(t *testing.T) {
	tl := newTestSetup(t)
	l := tl.open(t)
	syncs := make(chan struct{}, 16)
	release := make(chan struct{}, 16)
	l.w.syncHook = func(f *os.File) error {
		syncs <- struct{}{}
		<-release
		return datasync(f)
	}
	release <- struct{}{}
	p := l.Enter(ev(EventSign, "R1"))
	select {
	case <-syncs: // the record was written and synced before Enter returned
	default:
		t.Fatal("Enter returned before it wrote the record, with no write under way")
	}
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}

	first := make(chan error, 1)
	go func() { first <- l.Append(ev(EventSign, "R2")) }()
	<-syncs // a write is under way
	q := l.Enter(ev(EventSign, "R3"))
	waited := make(chan error, 1)
	go func() { waited <- q.Wait() }()
	select {
	case err := <-waited:
		t.Fatalf("Wait returned (%v) while the record waited for the write under way", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	if order := closedSignRuns(t, tl, l); len(order) != 3 || order[0] != "R1" || order[1] != "R2" || order[2] != "R3" {
		t.Fatalf("sign records in the log: %v", order)
	}
}

// closedSignRuns closes l and returns the runs of its sign records, in
// the log's order.
func closedSignRuns(t *testing.T, tl *testLog, l *Log) []string {
	t.Helper()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	evs, err := ReadEvents(tl.path, tl.setup.Identity)
	if err != nil {
		t.Fatal(err)
	}
	var runs []string
	for _, e := range evs {
		if e.Type == EventSign {
			runs = append(runs, e.Run)
		}
	}
	return runs
}
