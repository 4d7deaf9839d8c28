package bastion

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
	"github.com/postern/postern/bastion/journal"
)

// failingChanges is a journal whose change named fail cannot be written,
// as on a full disk (the first times of it, when times is set); the
// others go through.
type failingChanges struct {
	changes
	fail  string // "end", "dispatched" or "unknown"
	times *atomic.Int32
}

func (f failingChanges) fails(what string) bool {
	return f.fail == what && (f.times == nil || f.times.Add(-1) >= 0)
}

var errDiskFull = errors.New("write journal.db: no space left on device")

func (f failingChanges) End(id string, end journal.End) (*journal.Entry, error) {
	if f.fails("end") {
		return nil, errDiskFull
	}
	return f.changes.End(id, end)
}

func (f failingChanges) Dispatched(id string) (*journal.Entry, error) {
	if f.fails("dispatched") {
		return nil, errDiskFull
	}
	return f.changes.Dispatched(id)
}

func (f failingChanges) MarkUnknown(id string, u journal.Unknown) (*journal.Entry, error) {
	if f.fails("unknown") {
		return nil, errDiskFull
	}
	return f.changes.MarkUnknown(id, u)
}

// A denial the journal cannot record is told, to the client and in the
// log: the entry, written at the start, reads RUNNING, and unknown after
// a restart, though nothing was sent.
func TestDeniedEndTheJournalCannotWriteIsTold(t *testing.T) {
	w := newWorld(t)
	w.srv.changes = failingChanges{changes: w.journal, fail: "end"}
	w.decider.setDeny(func(*approvals.Request) audit.Reason { return "policy_deny" })
	_, errText, err := w.run("uptime", nil)
	e := w.only()
	if exitStatus(t, err) != ExitDenied || !strings.Contains(errText, "no space left on device") || !strings.Contains(errText, "entry "+e.ID+" reads RUNNING") {
		t.Fatalf("a denial the journal could not record: %v, stderr %q", err, errText)
	}
	if l := w.logs.String(); !strings.Contains(l, "level=ERROR") || !strings.Contains(l, "entry="+e.ID) {
		t.Fatalf("not logged:\n%s", l)
	}
}

// A command the host accepted whose dispatch the journal could not
// record (the disk full for a moment) is logged, and an unknown outcome
// recorded later says it was dispatched: the host had it.
func TestDispatchTheJournalCannotWriteIsLoggedAndKept(t *testing.T) {
	w := newWorld(t)
	once := &atomic.Int32{}
	once.Store(1)
	w.srv.changes = failingChanges{changes: w.journal, fail: "dispatched", times: once}
	w.host.set(func(h *testHost) { h.handle = func(s *hostSession) { s.ch.Close() } })
	w.run("deploy", nil)
	e := w.only()
	if e.Unknown == nil || e.Unknown.LastPhase != journal.PhaseDispatched {
		t.Fatalf("the unknown outcome of a command the host accepted: %+v", e.Unknown)
	}
	if l := w.logs.String(); !strings.Contains(l, "level=ERROR") || !strings.Contains(l, "dispatch") {
		t.Fatalf("not logged:\n%s", l)
	}
}
