package api

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/postern/postern/bastion/journal"
	"github.com/postern/postern/bastion/journal/journaltest"
	"github.com/postern/postern/internal/xdg"
)

// filledJournalFile makes, in a state directory of the test's own, a
// journal of n ended commands, and returns its path.
func filledJournalFile(tb testing.TB, n int) string {
	tb.Helper()
	tb.Setenv("XDG_STATE_HOME", tb.TempDir())
	dir, err := xdg.StateDir()
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(dir, xdg.JournalFile)
	j, err := journal.Open(path, "boot-1")
	if err != nil {
		tb.Fatal(err)
	}
	journaltest.Fill(tb, j, n, func(i int) []byte { return fmt.Appendf(nil, "echo %d", i) })
	j.Close()
	return path
}

// A listing read from the journal file, whose reader is slow (a pager
// the person has not scrolled), holds the file only while it reads a
// page: a gateway started meanwhile opens the journal, where it refused
// to start ("in use by another gateway or a reader").
func TestJournalFileListingLetsAGatewayStart(t *testing.T) {
	path := filledJournalFile(t, JournalPage+10)
	f, err := OpenJournalFile()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, opened := 0, false
	err = EachJournalEntry(context.Background(), f, "", 0, func(*JournalEntry) error {
		if n++; n == 1 {
			// The person's pager waits here, between two pages.
			g, err := journal.Open(path, "boot-2")
			if err != nil {
				t.Errorf("a gateway opening the journal while a listing is read: %v", err)
				return nil
			}
			g.Close()
			opened = true
		}
		return nil
	})
	if err != nil || n != JournalPage+10 || !opened {
		t.Fatalf("the listing: %v, %d entries", err, n)
	}
}
