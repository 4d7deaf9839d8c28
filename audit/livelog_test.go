package audit

import (
	"bytes"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
)

// A log is read while its writer appends to it: the gateway reads its own
// log for "postern activity", and "postern audit verify" may run beside a
// gateway. The reader sees the log as it was at some moment, never damage
// that is not there. These tests stop the reader after it has read a
// segment (segmentScanned) and let the writer go on then: the writer
// completes a record the reader saw half written, or fills the rest of the
// segment and goes on in the next, a spare when the reader listed the
// segments.

// liveLog is a writer part way into segment 1 of a log with the smallest
// segments, its spare segment 2 made (made when segment 1 is half full).
func liveLog(t *testing.T) (*testLog, *Log) {
	t.Helper()
	tl := newTestSetup(t)
	tl.cfg.SegmentSize = minSegmentSize
	tl.cfg.CheckpointEvery = 16
	l := tl.open(t)
	t.Cleanup(func() { l.Close() })
	// The spare is made when the segment before it is half full, by a
	// goroutine of the writer's that fills it with zeros.
	for i := 0; ; i++ {
		if fi, err := os.Stat(segmentName(tl.path, 2)); err == nil && fi.Size() == segmentSize(minSegmentSize, 2) {
			break
		}
		if i == maxAppends {
			t.Fatalf("no spare segment 2 after %d records", i)
		}
		appendPadded(t, l, i)
	}
	if !inUseOnDisk(t, segmentName(tl.path, 1)) || inUseOnDisk(t, segmentName(tl.path, 2)) {
		t.Fatal("the writer is not in segment 1")
	}
	return tl, l
}

// maxAppends bounds the records a test writes to bring the writer to a
// segment: far more than the smallest segments hold (about 300, 600 and
// 1,200 of these records).
const maxAppends = 5000

func appendPadded(t *testing.T, l *Log, i int) {
	t.Helper()
	e := ev(EventSign, "R"+strconv.Itoa(i%7))
	e.Detail = map[string]string{"i": strconv.Itoa(i), "pad": strings.Repeat("p", 600)}
	mustAppend(t, l, e)
}

// inUseOnDisk reports whether the segment file at path holds a record at
// its start.
func inUseOnDisk(t *testing.T, path string) bool {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [frameHeaderSize]byte
	if _, err := io.ReadFull(f, b[:]); err != nil {
		t.Fatal(err)
	}
	return !allZero(b[:])
}

// lastRecord returns where the last record of the segment file at path
// starts and how long it is.
func lastRecord(t *testing.T, path string) (off, size int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fr := newFrameReader(bytes.NewReader(b))
	fr.prealloc = true
	for {
		f, err := fr.next()
		if err == io.EOF {
			return off, size
		}
		if err != nil {
			t.Fatal(err)
		}
		off, size = f.off, f.size
	}
}

// afterScanOf runs fn once, when a scan has read the segment named name.
func afterScanOf(t *testing.T, name string, fn func()) {
	done := false
	segmentScanned = func(seg *segRef) {
		if seg.name == name && !done {
			done = true
			fn()
		}
	}
	t.Cleanup(func() { segmentScanned = nil })
}

// fillInto makes the writer fill its segment and go on into the next.
func fillInto(t *testing.T, tl *testLog, l *Log, next int) {
	for i := 0; !inUseOnDisk(t, segmentName(tl.path, next)); i++ {
		if i == maxAppends {
			t.Fatalf("the writer did not go on into segment %d after %d records", next, i)
		}
		appendPadded(t, l, i)
	}
	// Records in the next segment, with a checkpoint among them.
	for i := 0; i < 20; i++ {
		appendPadded(t, l, i)
	}
}

// The reader read segment 1 to where the writer was; the writer then
// filled it and went on in segment 2. The reader reads the rest of
// segment 1 before segment 2, where it read the records of segment 2 as
// following the last one it had seen, a gap in the chain.
func TestReadCatchesUpWithAWriterThatMovedOn(t *testing.T) {
	tl, l := liveLog(t)
	before := tl.verify(t).Records
	afterScanOf(t, "audit.log.000001", func() { fillInto(t, tl, l, 2) })
	r := tl.verify(t)
	if !r.OK || r.Torn != nil || r.Records <= before || r.Segments != 3 {
		t.Fatalf("a log read as its writer went on: %s torn=%+v records=%d (before %d) segments=%d",
			describe(r), r.Torn, r.Records, before, r.Segments)
	}
}

// The reader found segment 2 not in use yet, and the writer went on
// into it while the reader looked at the segments after segment 1. The
// reader reads the rest of segment 1 first here too.
func TestReadCatchesUpWithAWriterThatMovedOnAsItLooked(t *testing.T) {
	tl, l := liveLog(t)
	done := false
	sparesChecked = func() {
		if !done {
			done = true
			fillInto(t, tl, l, 2)
		}
	}
	t.Cleanup(func() { sparesChecked = nil })
	r := tl.verify(t)
	if !done || !r.OK || r.Torn != nil || r.Segments != 3 {
		t.Fatalf("a log read as its writer went on: %s torn=%+v segments=%d (the writer let on: %v)", describe(r), r.Torn, r.Segments, done)
	}
}

// The reader saw the last record of segment 1 half written, a torn write
// had the writer crashed there; the writer completed it, filled the
// segment and went on in segment 2. That is no torn write followed by
// records.
func TestReadOfAWriteInProgressBeforeTheWriterMovedOn(t *testing.T) {
	tl, l := liveLog(t)
	seg := segmentName(tl.path, 1)
	restore := halfWrite(t, seg)
	afterScanOf(t, "audit.log.000001", func() {
		restore()
		fillInto(t, tl, l, 2)
	})
	r := tl.verify(t)
	if !r.OK || r.Torn != nil || r.Segments != 3 {
		t.Fatalf("a log read as a write was in progress: %s torn=%+v segments=%d", describe(r), r.Torn, r.Segments)
	}
}

// The reader saw the last record of the last segment in use half written;
// the writer completed the write and wrote nothing more. The reader reads
// the end again and finds the record whole, not a torn write.
func TestReadOfAWriteInProgressAtTheEnd(t *testing.T) {
	tl, _ := liveLog(t)
	want := tl.verify(t).Records
	restore := halfWrite(t, segmentName(tl.path, 1))
	afterScanOf(t, "audit.log.000001", restore)
	r := tl.verify(t)
	if !r.OK || r.Torn != nil || r.Records != want {
		t.Fatalf("a log read as its last write was in progress: %s torn=%+v records=%d, want %d", describe(r), r.Torn, r.Records, want)
	}
}

// halfWrite zeroes the second half of the last record of the segment at
// path, as a reader may see a write in progress, and returns what puts
// it back.
func halfWrite(t *testing.T, path string) (restore func()) {
	t.Helper()
	off, size := lastRecord(t, path)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	kept := make([]byte, size/2)
	if _, err := f.ReadAt(kept, off+size-size/2); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(make([]byte, len(kept)), off+size-size/2); err != nil {
		t.Fatal(err)
	}
	return func() {
		if _, err := f.WriteAt(kept, off+size-size/2); err != nil {
			t.Error(err)
		}
	}
}
