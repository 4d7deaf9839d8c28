package audit

import (
	"runtime"
	"strconv"
	"testing"
	"time"
)

// A log with a great many runs registered in one gateway boot (a program
// that starts runs in a loop, or entries anyone can append after the last
// checkpoint) is read by activity and sessions --history in memory that
// does not grow with it: they keep the facts of the latest runs only.
func TestManyRunsInOneBootReadInBoundedMemory(t *testing.T) {
	const runs = 200_000
	tl, book := NewTimeline(time.Time{}, ""), NewSessionBook()
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	before := m.HeapAlloc
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for i := range runs {
		id := "R" + strconv.Itoa(i)
		e := Event{Seq: uint64(i), Type: EventRunRegistered, Time: at, BootID: "B1", Run: id, Label: "label " + id,
			Process: &Process{PID: 1000 + i, Exe: "/usr/bin/program-" + id, ExeSHA256: "0123456789abcdef", UID: 1000}}
		tl.Add(&e)
		book.Add(&e, func(Session) {})
	}
	runtime.GC()
	runtime.ReadMemStats(&m)
	held := int64(m.HeapAlloc) - int64(before)
	runtime.KeepAlive(tl)
	runtime.KeepAlive(book)
	if held > 8<<20 {
		t.Fatalf("after %d runs registered in one boot, the timeline and the session book hold %d MiB", runs, held>>20)
	}
	// The latest runs' facts are still at hand.
	id := "R" + strconv.Itoa(runs-1)
	l, _ := tl.Add(&Event{Seq: runs, Type: EventSessionApproved, Time: at, BootID: "B1", Run: id})
	if want := "exe=program-" + id; !containsField(l, "exe", "program-"+id) {
		t.Errorf("the latest run's facts are gone: %q, want %s", l.Text, want)
	}
}

func containsField(l Line, k, v string) bool {
	for _, f := range l.Fields {
		if f.Key == k && f.Value == v {
			return true
		}
	}
	return false
}

// So is a log with a great many session approvals open at once, which no
// gateway writes (a person approves each): past maxOpenSessions the
// oldest is passed on as the log shows it then, open, and every approval
// is passed on once.
func TestManyOpenApprovalsReadInBoundedMemory(t *testing.T) {
	const approvals = 200_000
	book := NewSessionBook()
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	before := m.HeapAlloc
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	emitted := 0
	for i := range approvals {
		id := strconv.Itoa(i)
		book.Add(&Event{Seq: uint64(i), Type: EventSessionApproved, Time: at, BootID: "B1", Run: "R" + id, Grant: "G" + id,
			Key: "SHA256:key", Approver: "pid=1 exe=/usr/bin/postern", Label: "label " + id,
			Process: &Process{PID: 1000 + i, Exe: "/usr/bin/program-" + id, ExeSHA256: "0123456789abcdef", UID: 1000}}, func(Session) { emitted++ })
	}
	runtime.GC()
	runtime.ReadMemStats(&m)
	held := int64(m.HeapAlloc) - int64(before)
	runtime.KeepAlive(book)
	if held > 8<<20 {
		t.Fatalf("after %d approvals open at once, the session book holds %d MiB", approvals, held>>20)
	}
	book.Flush(func(Session) { emitted++ })
	if emitted != approvals {
		t.Fatalf("%d approvals passed on, want %d", emitted, approvals)
	}
}
