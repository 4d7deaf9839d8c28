package journal

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Every change is an fsync'd commit, so these measure the disk as much as
// the code: run them on the file system the journal will live on.

// BenchmarkStartEnd is one command at a time: Start, then End, each
// durable before it returns.
func BenchmarkStartEnd(b *testing.B) {
	j, err := Open(filepath.Join(b.TempDir(), "journal.db"), "bench")
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		e := newEntry(fmt.Sprint("command ", i))
		if err := j.Start(e); err != nil {
			b.Fatal(err)
		}
		if _, err := j.End(e.ID, End{Outcome: OutcomeExited}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkConcurrent50 is 50 commands at once, each doing Start then
// End; an op is one command. It reports the latency each command saw
// (Start plus End) as well as the throughput. "grouped" is the journal as
// it is; "one-commit-per-change" turns group commit off, for comparison.
func BenchmarkConcurrent50(b *testing.B) {
	for _, c := range []struct {
		name     string
		maxBatch int
	}{{"grouped", 0}, {"one-commit-per-change", 1}} {
		b.Run(c.name, func(b *testing.B) {
			j, err := open(filepath.Join(b.TempDir(), "journal.db"), "bench", options{maxBatch: c.maxBatch})
			if err != nil {
				b.Fatal(err)
			}
			defer j.Close()
			var (
				next      atomic.Int64
				mu        sync.Mutex
				latencies []time.Duration
				wg        sync.WaitGroup
			)
			b.ResetTimer()
			start := time.Now()
			for range 50 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var mine []time.Duration
					for {
						i := next.Add(1)
						if i > int64(b.N) {
							break
						}
						t0 := time.Now()
						e := newEntry(fmt.Sprint("command ", i))
						if err := j.Start(e); err != nil {
							b.Error(err)
							return
						}
						if _, err := j.End(e.ID, End{Outcome: OutcomeExited}); err != nil {
							b.Error(err)
							return
						}
						mine = append(mine, time.Since(t0))
					}
					mu.Lock()
					latencies = append(latencies, mine...)
					mu.Unlock()
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			slices.Sort(latencies)
			if n := len(latencies); n > 0 {
				b.ReportMetric(float64(latencies[n/2].Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(latencies[n*99/100].Microseconds())/1000, "p99-ms")
				b.ReportMetric(float64(n)/elapsed.Seconds(), "cmds/s")
			}
		})
	}
}

var bigJournal struct {
	once sync.Once
	path string
	err  error
}

// bigJournalPath returns a journal of n ended commands, built once and
// removed when the benchmark that asked first ends.
func bigJournalPath(b *testing.B, n int) string {
	bigJournal.once.Do(func() {
		dir, err := os.MkdirTemp("", "journal-bench-")
		if err != nil {
			bigJournal.err = err
			return
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
		bigJournal.path = filepath.Join(dir, "journal.db")
		j, err := open(bigJournal.path, "fixture", options{noSync: true})
		if err != nil {
			bigJournal.err = err
			return
		}
		defer j.Close()
		var wg sync.WaitGroup
		var next atomic.Int64
		for range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := next.Add(1); i <= int64(n); i = next.Add(1) {
					e := newEntry(fmt.Sprint("command ", i))
					if err := j.Start(e); err != nil {
						bigJournal.err = err
						return
					}
					if _, err := j.End(e.ID, End{Outcome: OutcomeExited}); err != nil {
						bigJournal.err = err
						return
					}
				}
			}()
		}
		wg.Wait()
	})
	if bigJournal.err != nil {
		b.Fatal(bigJournal.err)
	}
	return bigJournal.path
}

// BenchmarkOpen100k opens a journal of 100,000 ended commands, as a
// starting gateway does (Open) and as the command line does without one
// (OpenReadOnly).
func BenchmarkOpen100k(b *testing.B) {
	n := 100000
	if testing.Short() {
		n = 2000 // CI runs it once to keep it working, and times nothing
	}
	path := bigJournalPath(b, n)
	b.Run("Open", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			j, err := Open(path, fmt.Sprint("bench-", i))
			if err != nil {
				b.Fatal(err)
			}
			j.Close()
		}
	})
	b.Run("OpenReadOnly", func(b *testing.B) {
		for b.Loop() {
			j, err := OpenReadOnly(path)
			if err != nil {
				b.Fatal(err)
			}
			j.Close()
		}
	})
}
