package approvals

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/postern/postern/audit"
)

// eventLog is an audit log in memory.
type eventLog struct {
	mu     sync.Mutex
	events []audit.Event
}

func (l *eventLog) Append(ev audit.Event) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, ev)
	return nil
}

// refusals returns how many action_denied events of run are in the log,
// and the sum of their suppressed counts.
func (l *eventLog) refusals(t *testing.T, run string) (recorded, suppressed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ev := range l.events {
		if ev.Type != audit.EventActionDenied || ev.Run != run {
			continue
		}
		recorded++
		if s := ev.Detail["suppressed"]; s != "" {
			n, err := strconv.Atoi(s)
			if err != nil {
				t.Fatalf("suppressed=%q", s)
			}
			suppressed += n
		}
	}
	return recorded, suppressed
}

// A run that floods the agent with requests it is refused does not fill
// the audit log: past a burst, its refusals are counted, and the count is
// recorded with the next refusal recorded, or on its own a moment later
// and when the gateway stops. Every refusal is accounted for; another
// requester's are recorded as ever.
func TestRefusalsPaced(t *testing.T) {
	// The flushes wait for the test to say the moment came (elapse): a
	// burst that takes longer than refusalFlush on a loaded machine is
	// still one burst.
	var due struct {
		sync.Mutex
		fs []func()
	}
	defer func(f func(time.Duration, func()) *time.Timer) { afterFunc = f }(afterFunc)
	afterFunc = func(_ time.Duration, f func()) *time.Timer {
		due.Lock()
		defer due.Unlock()
		due.fs = append(due.fs, f)
		return time.AfterFunc(time.Hour, f) // stopped by Stop, or never due
	}
	elapse := func() {
		due.Lock()
		fs := due.fs
		due.fs = nil
		due.Unlock()
		for _, f := range fs {
			f()
		}
	}
	w := newWorld(t)
	var mu sync.Mutex
	clock := time.Date(2026, 7, 22, 10, 0, 0, 0, time.UTC)
	w.cfg.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	w.e = NewEngine(w.cfg)
	log := &eventLog{}
	w.e.SetAudit(log)
	run := w.launch("coder", 10)
	flood := w.runReq(run, 13)

	const n = 1000
	for range n {
		w.e.Refused(flood, audit.ReasonKeyNotHeld)
	}
	if rec, _ := log.refusals(t, run.ID); rec != refusalBurst {
		t.Fatalf("%d refusals in a burst recorded %d events, want %d", n, rec, refusalBurst)
	}
	w.e.Refused(w.req(21), audit.ReasonKeyNotHeld)
	if rec, _ := log.refusals(t, ""); rec != 1 {
		t.Fatalf("another requester's refusal was not recorded while the run flooded: %d", rec)
	}
	accounted := func(want int) {
		t.Helper()
		if rec, sup := log.refusals(t, run.ID); rec+sup != want {
			t.Fatalf("%d refusals: %d recorded, %d counted", want, rec, sup)
		}
	}
	// A moment later, the count is recorded on its own.
	elapse()
	accounted(n)

	// A second later, refusalRate more are recorded, then counted again.
	mu.Lock()
	clock = clock.Add(time.Second)
	mu.Unlock()
	before, _ := log.refusals(t, run.ID)
	for range refusalRate + 1 {
		w.e.Refused(flood, audit.ReasonKeyNotHeld)
	}
	if rec, _ := log.refusals(t, run.ID); rec-before != refusalRate {
		t.Fatalf("a second later, %d refusals recorded, want %d", rec-before, refusalRate)
	}
	// The ones still counted when the gateway stops are recorded then.
	w.e.Refused(flood, audit.ReasonKeyNotHeld)
	w.e.Stop()
	accounted(n + refusalRate + 2)
}

// A requester refused after the engine stopped, while the gateway still
// serves the requests under way (Stop comes before the listeners close,
// and the audit log closes after them), has each refusal recorded at
// once: a count left for a flush a second later would be recorded after
// the log closed, if at all, and those refusals would be missing from it.
func TestRefusalsAfterStopAreRecordedAtOnce(t *testing.T) {
	defer func(f func(time.Duration, func()) *time.Timer) { afterFunc = f }(afterFunc)
	afterFunc = func(time.Duration, func()) *time.Timer {
		return time.AfterFunc(time.Hour, func() {}) // never due: the log is closed by then
	}
	w := newWorld(t)
	log := &eventLog{}
	w.e.SetAudit(log)
	run := w.launch("coder", 10)
	flood := w.runReq(run, 13)
	for range refusalBurst {
		w.e.Refused(flood, audit.ReasonKeyNotHeld)
	}
	w.e.Stop()
	const after = 5
	for range after {
		w.e.Refused(flood, audit.ReasonKeyNotHeld)
	}
	if rec, sup := log.refusals(t, run.ID); rec+sup != refusalBurst+after {
		t.Fatalf("%d refusals, %d of them after the engine stopped: %d recorded, %d counted", refusalBurst+after, after, rec, sup)
	}
}
