package audit

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func benchEvent(g, i int) Event {
	return Event{Type: EventSign, BootID: "B8", VaultEpoch: 17, Run: fmt.Sprintf("R%d", g), Grant: "G1",
		Key: "SHA256:Pq3b0mJk7bXo1vJcQ0m8aEwV3fW6yCq7cOeG0c3xq1Y", Dest: "SHA256:2mJkq8v0cZ3d1oPqYxW7bR5tE9uI0oPaSdFgHjKlZxC",
		DestNames: []string{"prod-db-1"}, Mode: ModeSession, Detail: map[string]string{"i": fmt.Sprint(i)}}
}

// BenchmarkAppendDurable measures sustained appends with durability kept:
// every Append returns only after its record is fdatasync'ed, checkpoints
// (with their key-file rotation) run at the default policy. The events/s
// metric is the figure to read; events/fdatasync shows the group commit.
func BenchmarkAppendDurable(b *testing.B) {
	for _, n := range []int{1, 8, 16, 64} {
		b.Run(fmt.Sprintf("appenders=%d", n), func(b *testing.B) {
			tl := newTestSetup(b)
			tl.cfg.Now = nil
			l := tl.open(b)
			var syncs atomic.Int64
			l.w.syncHook = func(f *os.File) error {
				syncs.Add(1)
				return datasync(f)
			}
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for g := 0; g < n; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
						if err := l.Append(benchEvent(g, int(i))); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(b.N)/float64(max(syncs.Load(), 1)), "events/fdatasync")
			l.Close()
		})
	}
}

var verifyBenchLog struct {
	once sync.Once
	b    []byte
	tl   *testLog
}

// benchLog returns a closed log of 10,000 entries at the default
// checkpoint policy.
func benchLog(b *testing.B) ([]byte, *testLog) {
	verifyBenchLog.once.Do(func() {
		tl := newTestSetup(b)
		l := tl.open(b)
		l.w.syncHook = func(*os.File) error { return nil } // building the fixture only
		var wg sync.WaitGroup
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 1250; i++ {
					if err := l.Append(benchEvent(g, i)); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		l.Close()
		verifyBenchLog.b, verifyBenchLog.tl = tl.bytes(b), tl
	})
	return verifyBenchLog.b, verifyBenchLog.tl
}

// BenchmarkVerify measures offline verification (no key): the records/s
// metric is the figure to read.
func BenchmarkVerify(b *testing.B) {
	data, tl := benchLog(b)
	var records uint64
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		r, err := Verify(bytes.NewReader(data), tl.pin())
		if err != nil || !r.OK {
			b.Fatalf("verify: %v %s", err, describe(r))
		}
		records += r.Records
	}
	b.ReportMetric(float64(records)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkDecodeEvents measures verification plus decryption with the
// identity (postern audit show).
func BenchmarkDecodeEvents(b *testing.B) {
	data, tl := benchLog(b)
	var events int
	b.ResetTimer()
	for b.Loop() {
		_, err := DecodeEvents(bytes.NewReader(data), tl.setup.Identity, tl.pin(), func(Event) error {
			events++
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkSealEntry measures the per-event encryption, which runs on the
// appending goroutines in parallel: the next key of the chain (two
// hashes) and the AEAD. Starting a chain (two X25519 multiplications) is
// done ahead of time, once per checkpoint, and is not on this path.
func BenchmarkSealEntry(b *testing.B) {
	tl := newTestSetup(b)
	js := []byte(`{"type":"sign","time":"2026-07-22T14:20:11Z","boot_id":"B8","vault_epoch":17,"run":"R31"}`)
	seed, err := newChainSeed(&tl.setup.Recipient)
	if err != nil {
		b.Fatal(err)
	}
	c := startChain(seed)
	for b.Loop() {
		n, key := c.next()
		if _, err := sealEntry([16]byte{}, 1, js, c.epk, n, &key); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendOverFloor alternates a durable Append of a sign event
// with the floor under it: a write of the same number of bytes over a
// pre-allocated, zero-filled file in the same directory, then fdatasync.
// The ratio of the medians is what the writer adds.
func BenchmarkAppendOverFloor(b *testing.B) {
	tl := newTestSetup(b)
	tl.cfg.Now = nil
	l := tl.open(b)
	defer l.Close()
	f, err := os.OpenFile(filepath.Join(tl.dir, "floor"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	const size = 64 << 20
	zeros := make([]byte, 1<<20)
	for off := int64(0); off < size; off += int64(len(zeros)) {
		f.WriteAt(zeros, off)
	}
	f.Sync()
	mustAppend(b, l, benchEvent(0, 0))
	before := l.w.seg.off
	mustAppend(b, l, benchEvent(0, 1))
	rec := make([]byte, l.w.seg.off-before)
	var ta, tf []time.Duration
	var off int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t := time.Now()
		mustAppend(b, l, benchEvent(0, i))
		ta = append(ta, time.Since(t))
		t = time.Now()
		if off+int64(len(rec)) > size {
			off = 0
		}
		f.WriteAt(rec, off)
		datasync(f)
		off += int64(len(rec))
		tf = append(tf, time.Since(t))
	}
	b.StopTimer()
	slices.Sort(ta)
	slices.Sort(tf)
	b.ReportMetric(float64(ta[len(ta)/2].Microseconds()), "append-µs")
	b.ReportMetric(float64(tf[len(tf)/2].Microseconds()), "floor-µs")
	b.ReportMetric(float64(ta[len(ta)/2])/float64(tf[len(tf)/2]), "ratio")
}
