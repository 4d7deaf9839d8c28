package journal

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

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
