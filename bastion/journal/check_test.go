package journal

import (
	"fmt"
	"path/filepath"
	"testing"
)

// The check after Open reads the journal while it serves: commands
// started and ended meanwhile are not damage. (bbolt's consistency check
// in a read-only transaction counts a page that a later commit freed,
// and that the transaction still reaches, as "reachable freed".)
func TestCheckAfterOpenWhileCommandsRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	j, err := Open(path, "first")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		mustStart(t, j, newEntry(fmt.Sprintf("command %d", i)))
	}
	j.Close()
	for round := range 10 {
		j, err := Open(path, fmt.Sprintf("round-%d", round))
		if err != nil {
			t.Fatal(err)
		}
		if j.checking == nil {
			t.Fatal("the journal was checked whole before Open returned: the test checks the check after it")
		}
		for i := range 20 {
			e := newEntry(fmt.Sprintf("round %d command %d", round, i))
			if err := j.Start(e); err != nil {
				t.Fatalf("round %d: Start while the journal is checked: %v", round, err)
			}
			if _, err := j.Dispatched(e.ID); err != nil {
				t.Fatalf("round %d: Dispatched while the journal is checked: %v", round, err)
			}
		}
		if err := j.Damaged(); err != nil {
			t.Fatalf("round %d: a sound journal was found damaged: %v", round, err)
		}
		j.Close()
	}
}
