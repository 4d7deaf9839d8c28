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
		go func() { others <- l.Append(ev(EventSign, "R2")) }()
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
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	evs, err := ReadEvents(tl.path, tl.setup.Identity)
	if err != nil {
		t.Fatal(err)
	}
	signs := 0
	for _, e := range evs {
		if e.Type == EventSign {
			signs++
		}
	}
	if signs != 1+later {
		t.Fatalf("%d sign records in the log, want %d", signs, 1+later)
	}
}
