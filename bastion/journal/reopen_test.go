package journal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// A reader that holds the journal only while it reads a page (postern
// journal list with no gateway) walks the file's pages once, not once a
// page: listing 100,000 entries took 5.7 s, the walk made again at each
// page. A file changed between two reads is walked again, so that damage
// made meanwhile is still refused.
func TestReopenWalksTheFileOnlyWhenItChanged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	w := openTest(t, path, "inst")
	for i := range 40 {
		mustStart(t, w, newEntry(fmt.Sprint("command ", i)))
	}
	w.Close()

	walks := pageGraphWalks.Load()
	j, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	seen, before := 0, ""
	for {
		page, err := j.List(ListOptions{Limit: 8, Before: before})
		if err != nil {
			t.Fatal(err)
		}
		j.Close()
		if len(page) == 0 {
			break
		}
		seen += len(page)
		before = page[len(page)-1].ID
		if j, err = ReopenReadOnly(j); err != nil {
			t.Fatal(err)
		}
	}
	if seen != 40 {
		t.Fatalf("listed %d entries a page at a time, want 40", seen)
	}
	if n := pageGraphWalks.Load() - walks; n != 1 {
		t.Fatalf("six reads of an unchanged file walked it %d times, want once", n)
	}

	// Changed by a writer: walked again.
	w = openTest(t, path, "inst-2")
	mustStart(t, w, newEntry("one more"))
	w.Close()
	walks = pageGraphWalks.Load()
	if j, err = ReopenReadOnly(j); err != nil {
		t.Fatal(err)
	}
	j.Close()
	if n := pageGraphWalks.Load() - walks; n != 1 {
		t.Fatalf("a file changed since the last read was walked %d times, want once", n)
	}

	// Damaged between two reads: refused.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b[:len(b)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	if j2, err := ReopenReadOnly(j); !errors.Is(err, ErrDamaged) {
		if j2 != nil {
			j2.Close()
		}
		t.Fatalf("a file cut short between two reads: %v, want ErrDamaged", err)
	}
}
