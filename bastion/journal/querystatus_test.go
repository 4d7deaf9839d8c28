package journal

import (
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// A listing by status (the console's unknown commands every two seconds,
// postern journal list --status) reads the entries that can have it,
// from the indexes, not every entry of the journal: among thousands of
// completed commands it finds the few unknown or running ones without
// decoding the others. What it lists, and in what order, is as before,
// a page at a time, and on a read-only handle too.
func TestListingByStatusReadsOnlyTheEntriesThatCanHaveIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	j, err := open(path, "inst-1", options{noSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	lost := func(cmd string) *Entry {
		e := mustStart(t, j, newEntry(cmd))
		if _, err := j.MarkUnknown(e.ID, Unknown{Reason: ReasonUpstreamLost}); err != nil {
			t.Fatal(err)
		}
		return e
	}
	oldest := lost("make first")
	const completed = 2000
	var wg sync.WaitGroup
	for i := range completed {
		wg.Go(func() {
			e := newEntry("echo " + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676)))
			if err := j.Start(e); err != nil {
				t.Error(err)
				return
			}
			if _, err := j.End(e.ID, End{Outcome: OutcomeExited}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	middle, newest := lost("make second"), lost("make third")
	running := mustStart(t, j, newEntry("make fourth"))

	var got []*Entry
	list := func(o ListOptions) float64 {
		return testing.AllocsPerRun(1, func() {
			if got, err = j.List(o); err != nil {
				t.Fatal(err)
			}
		})
	}
	ids := func() []string {
		var s []string
		for _, e := range got {
			s = append(s, e.ID)
		}
		return s
	}
	if allocs := list(ListOptions{Status: "unknown", Limit: 21}); allocs >= completed {
		t.Fatalf("listing the 3 unknown entries among %d completed ones made %.0f allocations: it read every entry", completed, allocs)
	}
	if want := []string{newest.ID, middle.ID, oldest.ID}; !slices.Equal(ids(), want) {
		t.Fatalf("unknown entries %v, want %v", ids(), want)
	}
	if allocs := list(ListOptions{Status: "running"}); allocs >= completed || !slices.Equal(ids(), []string{running.ID}) {
		t.Fatalf("running entries %v (%.0f allocations)", ids(), allocs)
	}
	list(ListOptions{Status: "unknown", Limit: 2})
	if !slices.Equal(ids(), []string{newest.ID, middle.ID}) {
		t.Fatalf("the first page of unknown entries: %v", ids())
	}
	list(ListOptions{Status: "unknown", Before: middle.ID})
	if !slices.Equal(ids(), []string{oldest.ID}) {
		t.Fatalf("the next page of unknown entries: %v", ids())
	}
	j.Close()

	// Read-only, no bastion runs: the running entry is shown unknown.
	if j, err = OpenReadOnly(path); err != nil {
		t.Fatal(err)
	}
	list(ListOptions{Status: "unknown"})
	if want := []string{running.ID, newest.ID, middle.ID, oldest.ID}; !slices.Equal(ids(), want) {
		t.Fatalf("unknown entries read-only %v, want %v", ids(), want)
	}
	if list(ListOptions{Status: "running"}); len(got) != 0 {
		t.Fatalf("running entries read-only: %v", ids())
	}
}
