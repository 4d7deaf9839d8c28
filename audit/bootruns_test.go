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
