package journal

import (
	"fmt"
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
