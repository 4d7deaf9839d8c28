package audit

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// segmentedLog writes n events of about 900 bytes each to a log with the
// smallest segments, so that they span several.
func segmentedLog(t *testing.T, n int) (*testLog, *Log) {
	t.Helper()
	tl := newTestSetup(t)
	tl.cfg.SegmentSize = minSegmentSize
	tl.cfg.CheckpointEvery = 16
	l := tl.open(t)
	for i := 0; i < n; i++ {
		e := ev(EventSign, "R"+strconv.Itoa(i%7))
		e.Detail = map[string]string{"i": strconv.Itoa(i), "pad": strings.Repeat("p", 600)}
		mustAppend(t, l, e)
	}
	return tl, l
}

func TestSegmentsAreFilledInPlace(t *testing.T) {
	tl, l := segmentedLog(t, 1500)
	// Closed first: the next segment may still be in the making (filled
	// with zeros in place) until the writer has waited for it.
	l.Close()
	// Every segment has the size it was made with: records were written
	// over zeros, never appended.
	idx, err := segmentIndexes(tl.path)
	if err != nil || len(idx) < 2 {
		t.Fatalf("segments %v (%v): want several", idx, err)
	}
	for _, i := range append([]int{0}, idx...) {
		fi, err := os.Stat(segmentName(tl.path, i))
		if err != nil || fi.Size() != segmentSize(minSegmentSize, i) {
			t.Fatalf("segment %d: %v size %d, want %d", i, err, fi.Size(), segmentSize(minSegmentSize, i))
		}
	}
	r := tl.verify(t)
	if !r.OK || r.Entries != 1500 || r.Segments < 2 || r.Version != 2 {
		t.Fatalf("verify: %s entries=%d segments=%d", describe(r), r.Entries, r.Segments)
	}
	var got []string
	_, err = ReadLog(tl.path, tl.setup.Identity, ReadOptions{VerifyOptions: tl.pin()}, func(e Event) error {
		if e.Type == EventSign {
			got = append(got, e.Detail["i"])
		}
		return nil
	})
	if err != nil || len(got) != 1500 || got[0] != "0" || got[1499] != "1499" {
		t.Fatalf("read %d events (%v)", len(got), err)
	}
	// Reopening continues in the last segment; a spare made ahead of time
	// is removed and made again.
	l = tl.open(t)
	mustAppend(t, l, ev(EventGatewayStarted, ""))
	l.Close()
	if r := tl.verify(t); !r.OK || r.Entries != 1501 || r.UnsealedEntries != 0 {
		t.Fatalf("after reopen: %s entries=%d", describe(r), r.Entries)
	}
}

func TestMissingSegmentIsDamage(t *testing.T) {
	tl, l := segmentedLog(t, 1500)
	l.Close()
	if err := os.Rename(segmentName(tl.path, 1), tl.path+".moved"); err != nil {
		t.Fatal(err)
	}
	// Verification reports it, after the segments before it.
	r, err := VerifyPath(tl.path, tl.pin())
	if err != nil || r.OK || r.Failure.Kind != FindingSegmentMissing || r.Failure.File != filepath.Base(segmentName(tl.path, 1)) || r.Records == 0 {
		t.Fatalf("verify with segment 1 gone: %v, %+v", err, r)
	}
	if _, err := Open(tl.cfg); !errors.Is(err, ErrDamaged) {
		t.Fatalf("open with segment 1 gone: %v", err)
	}
}

// TestOpenVerifiesFromTheLastCheckpoint: a gateway starting over a long log
// reads only from the segment of its last checkpoint; damage there stops
// it, damage further back is for the offline Verify to find.
func TestOpenVerifiesFromTheLastCheckpoint(t *testing.T) {
	tl, l := segmentedLog(t, 1500)
	l.Close()
	idx, _ := segmentIndexes(tl.path)
	lastInUse, err := removeSpares(tl.path, idx)
	if err != nil {
		t.Fatal(err)
	}
	last := segmentName(tl.path, lastInUse)
	flipIn := func(name string, at int64) func() {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		orig := bytes.Clone(b)
		b[at] ^= 0x20
		os.WriteFile(name, b, 0o600)
		return func() { os.WriteFile(name, orig, 0o600) }
	}
	// Damage in segment 0, long before the last checkpoint.
	undo := flipIn(tl.path, 300)
	r := tl.verify(t)
	if r.OK || r.Failure.File != filepath.Base(tl.path) {
		t.Fatalf("offline verify missed damage in segment 0: %s", describe(r))
	}
	l2, err := Open(tl.cfg)
	if err != nil {
		t.Fatalf("open read back further than the last checkpoint's segment: %v", err)
	}
	l2.Close()
	undo()
	// Damage in the last segment.
	flipIn(last, 100)
	if _, err := Open(tl.cfg); !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), filepath.Base(last)) {
		t.Fatalf("open over damage in the last segment: %v", err)
	}
}

// TestOpenRefusesAKeyFileTheLastCheckpointDidNotCommitTo: the last
// checkpoint's next key must be the key file's.
func TestOpenRefusesAKeyFileTheLastCheckpointDidNotCommitTo(t *testing.T) {
	tl, l := segmentedLog(t, 1500)
	l.Close()
	other := newTestSetup(t)
	b, _ := os.ReadFile(other.setup.KeyFile)
	os.WriteFile(tl.setup.KeyFile, b, 0o600)
	if _, err := Open(tl.cfg); err == nil || !strings.Contains(err.Error(), "key") {
		t.Fatalf("open with another key file: %v", err)
	}
}

// TestTornWriteWithAHole: a power failure during a write of several
// blocks can leave later blocks written and an earlier one not. The record
// bytes before the hole and after it are a torn write: reported, saved
// and cleared on reopen, never taken for damage.
func TestTornWriteWithAHole(t *testing.T) {
	tl := newTestSetup(t)
	tl.cfg.CheckpointEvery = -1
	tl.cfg.SegmentSize = 4 << 20
	l := tl.open(t)
	for i := 0; i < 3; i++ {
		mustAppend(t, l, ev(EventSign, "R1"))
	}
	good := l.w.seg.off
	// One batch of several records, written with a lost block in the middle.
	var batch []byte
	l.w.writeHook = func(f *os.File, b []byte, off int64) (int, error) {
		batch = bytes.Clone(b)
		hole := (off/tornAlign + 2) * tornAlign
		w := bytes.Clone(b)
		clear(w[hole-off : hole-off+tornAlign])
		f.WriteAt(w, off)
		return 0, syscall.EIO // the power went
	}
	l.w.syncHook = func(*os.File) error { return nil }
	big := ev(EventSign, "R2")
	big.Detail = map[string]string{"pad": strings.Repeat("x", 3000)}
	if err := l.Append(big); err == nil {
		t.Fatal("append survived a failed write")
	}
	// The writer zeroes what it wrote on failure; undo that, as a power
	// failure would have left the blocks.
	l.Close()
	b, _ := os.ReadFile(tl.path)
	w := bytes.Clone(batch)
	hole := (good/tornAlign + 2) * tornAlign
	clear(w[hole-good : hole-good+tornAlign])
	copy(b[good:], w)
	os.WriteFile(tl.path, b, 0o600)
	r := tl.verify(t)
	if !r.OK || r.Torn == nil || r.Torn.Offset != good {
		t.Fatalf("a write with a hole: %s torn=%+v", describe(r), r.Torn)
	}
	// More than one write away from the records: damage.
	far := bytes.Clone(b)
	far[good+maxWrite+10] = 1
	os.WriteFile(tl.path, far, 0o600)
	if r := tl.verify(t); r.OK {
		t.Fatal("bytes far past the records passed as a torn write")
	}
	os.WriteFile(tl.path, b, 0o600)
	l = tl.open(t)
	mustAppend(t, l, ev(EventSign, "R3"))
	l.Close()
	r = tl.verify(t)
	if !r.OK || r.Torn != nil || r.Entries != 5 { // 3, the recovery entry, R3
		t.Fatalf("after reopen: %s torn=%+v entries=%d", describe(r), r.Torn, r.Entries)
	}
	if _, err := os.Stat(fmt.Sprintf("%s.torn-%d", tl.path, good)); err != nil {
		t.Fatalf("torn write not saved: %v", err)
	}
}

// TestForeignBytesInFreeSpace: the writer refuses to write over bytes
// another process put after its records.
func TestForeignBytesInFreeSpace(t *testing.T) {
	tl := newTestSetup(t)
	l := tl.open(t)
	mustAppend(t, l, ev(EventSign, "R1"))
	f, err := os.OpenFile(tl.path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("forged record"), l.w.seg.off)
	f.Close()
	if err := l.Append(ev(EventSign, "R2")); !errors.Is(err, ErrNotRecorded) || !strings.Contains(err.Error(), "another process") {
		t.Fatalf("append over foreign bytes: %v", err)
	}
	l.Close()
}

// TestVersion1LogContinuesInSegments: a log written by version 1 keeps its
// file as it is and goes on in version 2 segments; the whole verifies and
// reads.
func TestVersion1LogContinuesInSegments(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"audit.log", "audit.key", "audit.pin", "audit.recipient"} {
		b, err := os.ReadFile(filepath.Join("testdata/v1", name))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, name), b, 0o600)
	}
	_, pin, id := v1Fixture(t)
	s, err := LoadSetup(dir)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "audit.log")
	before, _ := os.ReadFile(path)
	l, err := Open(s.Config(path))
	if err != nil {
		t.Fatal(err)
	}
	e := ev(EventSign, "R9")
	e.Detail = map[string]string{"i": "k"}
	mustAppend(t, l, e)
	l.Close()
	if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
		t.Fatal("the version 1 file was written to")
	}
	r, err := VerifyPath(path, pin)
	if err != nil || !r.OK || r.Version != 1 || r.Segments != 2 || r.UnsealedEntries != 0 {
		t.Fatalf("continued log: %v %s segments=%d", err, describe(r), r.Segments)
	}
	var signs string
	if _, err := ReadLog(path, id, ReadOptions{VerifyOptions: pin}, func(e Event) error {
		if e.Type == EventSign {
			signs += e.Detail["i"]
		}
		return nil
	}); err != nil || signs != "abcdefghijk" {
		t.Fatalf("read %q: %v", signs, err)
	}
}

// TestReadSeeksByCheckpointSummaries: with Run or Since, ReadLog decrypts
// only the stretches whose checkpoint summaries can hold what is asked
// for, and passes every event that is.
func TestReadSeeksByCheckpointSummaries(t *testing.T) {
	tl := newTestSetup(t)
	tl.cfg.CheckpointEvery = 16
	l := tl.open(t)
	var times []time.Time
	for i := 0; i < 160; i++ {
		run := "R1"
		if i >= 96 && i < 112 {
			run = "R2" // one stretch of its own
		}
		e := ev(EventSign, run)
		e.Time = tl.cfg.Now()
		e.Detail = map[string]string{"i": strconv.Itoa(i)}
		times = append(times, e.Time)
		mustAppend(t, l, e)
	}
	mustAppend(t, l, ev(EventSign, "R2")) // unsealed: always read
	l.Close()
	var opened atomic.Int64
	entryOpened = func() { opened.Add(1) }
	defer func() { entryOpened = nil }()
	read := func(opts ReadOptions) (events []Event) {
		opened.Store(0)
		opts.VerifyOptions = tl.pin()
		rep, err := ReadLog(tl.path, tl.setup.Identity, opts, func(e Event) error {
			if e.Type == EventSign {
				events = append(events, e)
			}
			return nil
		})
		if err != nil || !rep.OK {
			t.Fatalf("read %+v: %v %s", opts, err, describe(rep))
		}
		return events
	}
	all := read(ReadOptions{})
	if len(all) != 161 || opened.Load() != 161 {
		t.Fatalf("full read: %d events, %d decrypted", len(all), opened.Load())
	}
	r2 := read(ReadOptions{Run: "R2"})
	n := 0
	for _, e := range r2 {
		if e.Run == "R2" {
			n++
		}
	}
	if n != 17 || opened.Load() != 17 {
		t.Fatalf("--run R2: %d of its 17 events, %d entries decrypted, want 17", n, opened.Load())
	}
	since := read(ReadOptions{Since: times[150]})
	if opened.Load() != 1+16 || since[len(since)-1].Run != "R2" {
		t.Fatalf("--since: %d entries decrypted, want 17 (the last stretch and the unsealed entry)", opened.Load())
	}
	for _, e := range since[:len(since)-1] {
		if i, _ := strconv.Atoi(e.Detail["i"]); e.Time.Before(times[150]) && i < 144 {
			t.Fatalf("--since read a stretch before it: %+v", e)
		}
	}
}

// A file beside the log whose name reads as a segment's number with more
// leading zeros than the writer gives it (audit.log.0000001) is no
// segment: verification and the gateway's start read the log as it is,
// where they counted it as a second segment 1, and reported segment 2 as
// missing, "records were removed from the log", of a log nothing had
// been removed from, and the gateway did not start.
func TestStrayFileNamedLikeASegmentIsNone(t *testing.T) {
	tl, l := segmentedLog(t, 1500)
	l.Close()
	want, err := VerifyPath(tl.path, tl.pin())
	if err != nil || !want.OK {
		t.Fatalf("verify: %v %+v", err, want)
	}
	b, err := os.ReadFile(segmentName(tl.path, 1))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{".0000001", ".0000002"} {
		if err := os.WriteFile(tl.path+name, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r, err := VerifyPath(tl.path, tl.pin())
	if err != nil || !r.OK || r.Records != want.Records {
		t.Fatalf("verify with audit.log.0000001 and .0000002 beside the log: %v: %s (%d records, want %d)", err, describe(r), r.Records, want.Records)
	}
	l, err = Open(tl.cfg)
	if err != nil {
		t.Fatalf("open with audit.log.0000001 and .0000002 beside the log: %v", err)
	}
	mustAppend(t, l, ev(EventSign, "R1"))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if r, err := VerifyPath(tl.path, tl.pin()); err != nil || !r.OK || r.Records <= want.Records {
		t.Fatalf("verify after an append: %v: %s", err, describe(r))
	}
}
