package api

import (
	"context"
	"testing"
)

// BenchmarkJournalFileListing lists a journal of 20,000 entries (-short:
// three pages' worth) from its file, as postern journal list does with
// no gateway: a page at a time, the file held only while a page is read.
// 100,000 entries took 1.58 s when each page walked the whole file again,
// 0.67 s since (2-core VM, 2026-12-05).
func BenchmarkJournalFileListing(b *testing.B) {
	entries := 20_000
	if testing.Short() {
		entries = 2*JournalPage + 3
	}
	filledJournalFile(b, entries)
	b.ResetTimer()
	for b.Loop() {
		f, err := OpenJournalFile()
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		if err := EachJournalEntry(context.Background(), f, "", 0, func(*JournalEntry) error { n++; return nil }); err != nil || n != entries {
			b.Fatalf("%d entries listed: %v", n, err)
		}
		f.Close()
	}
}
