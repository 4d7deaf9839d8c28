package audit

import (
	"errors"
	"os"
	"syscall"
	"testing"
)

// A record Start began takes its place at once: one appended after it
// follows it in the log, and Wait returns only once it is durable.
func TestStartTakesItsPlace(t *testing.T) {
	tl := newTestSetup(t)
	l := tl.open(t)
	syncing, release := make(chan struct{}), make(chan struct{})
	l.w.syncHook = func(f *os.File) error {
		syncing <- struct{}{}
		<-release
		return datasync(f)
	}
	p := l.Start(ev(EventSign, "R1"))
	<-syncing // its write is under way, its fdatasync not done
	waited := make(chan error, 1)
	go func() { waited <- p.Wait() }()
	appended := make(chan error, 1)
	go func() { appended <- l.Append(ev(EventActionDenied, "R1")) }()
	select {
	case err := <-waited:
		t.Fatalf("Wait returned (%v) before the record's fdatasync", err)
	default:
	}
	close(release)
	go func() {
		for range syncing { // the Append's own sync
		}
	}()
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	if err := <-appended; err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(); err != nil {
		t.Fatalf("a second Wait: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	close(syncing)
	evs, err := ReadEvents(tl.path, tl.setup.Identity)
	if err != nil {
		t.Fatal(err)
	}
	var order []EventType
	for _, e := range evs {
		if e.Type == EventSign || e.Type == EventActionDenied {
			order = append(order, e.Type)
		}
	}
	if len(order) != 2 || order[0] != EventSign || order[1] != EventActionDenied {
		t.Fatalf("entries in the log: %v", order)
	}
}

// A record Start began that cannot be made durable, or that a closed log
// cannot take, is not recorded: Wait says so, every time it is asked.
func TestStartNotRecorded(t *testing.T) {
	tl := newTestSetup(t)
	l := tl.open(t)
	l.w.syncHook = func(*os.File) error { return syscall.EIO }
	p := l.Start(ev(EventSign, "R1"))
	for range 2 {
		if err := p.Wait(); !errors.Is(err, ErrNotRecorded) || !errors.Is(err, syscall.EIO) {
			t.Fatalf("Wait on a failing disk: %v", err)
		}
	}
	l.Close()
	l = tl.open(t)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Start(ev(EventSign, "R1")).Wait(); !errors.Is(err, ErrNotRecorded) || !errors.Is(err, ErrClosed) {
		t.Fatalf("Wait on a closed log: %v", err)
	}
}
