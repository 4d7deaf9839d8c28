package audit

import (
	"fmt"
	"io"
	"time"
)

// Reading a log its writer appends to. The gateway reads its own log
// while it goes on writing it ("postern activity", "postern audit show"),
// and "postern audit verify" may run beside a gateway. A reader then
// meets the segment being written in any state a write passes through: a
// record half copied, or zeros where a record is about to go and bytes
// after them already there (a file is read in chunks, at different
// moments). And a segment that was a spare, all zeros, when the reader
// listed the segments may hold records by the time the reader gets to it,
// after records the writer put at the end of the segment the reader has
// already read.
//
// The writer fills one segment at a time, from its start and in order,
// and goes on into the next only when a write does not fit. Once a reader
// sees the next segment in use, then, the segment before it is final. A
// scan settles each segment before it goes on (settle):
//   - when the next segment is in use (its first bytes are not zero), the
//     scan reads the segment again from its last good record, so that it
//     reads every record the writer put there;
//   - otherwise the segment is the last in use. A torn write or damage
//     where its records end is read again, three times over 55 ms: a write
//     in progress lasts microseconds, a crash's torn write and damage stay.
//     The segments after it must hold only zeros; when one does not and
//     the next segment has meanwhile come into use, the writer went on
//     while the reader looked, and the scan goes on with it.
//
// A log nobody writes reads as it would without this: reading it again
// finds what the first read found. The scan ends with the last segment in
// use as it found it; what the writer adds after that is for the next
// read.

// rereadAfter are the waits before each reading again of a torn write or
// damage at the end of the last segment in use.
var rereadAfter = []time.Duration{0, 5 * time.Millisecond, 50 * time.Millisecond}

// settled is what settle found of a segment.
type settled int

const (
	goOn      settled = iota // read the next segment
	lastInUse                // the segment is the last in use, the ones after it all zeros
)

// settle reads the end of segment k again where a writer may have been
// writing it when the scan read it (see above), and says whether the scan
// goes on to the next segment.
func (sc *scanner) settle(fr *frameReader, segs []segRef, k int) (settled, error) {
	seg := &segs[k]
	if seg.path == "" || !fr.prealloc || (sc.fail != nil && !sc.failTail) {
		return goOn, nil
	}
	for try := 0; ; try++ {
		next, err := inUse(segs, k+1)
		if err != nil {
			return goOn, err
		}
		if next {
			return goOn, sc.rescan(fr, seg)
		}
		if !sc.tailIn(seg) || try == len(rereadAfter) {
			break
		}
		time.Sleep(rereadAfter[try])
		if err := sc.rescan(fr, seg); err != nil {
			return goOn, err
		}
	}
	if sparesChecked != nil {
		sparesChecked()
	}
	clean, err := allZeroAfter(segs, k)
	if err != nil || clean {
		return lastInUse, err
	}
	// Bytes after the last segment in use: the writer went on while the
	// scan looked, or they are for the scan to report, reading on.
	next, err := inUse(segs, k+1)
	if err == nil && next {
		err = sc.rescan(fr, seg)
	}
	return goOn, err
}

// sparesChecked, when set, is called before settle looks at the
// segments after the last one in use (a test lets the writer go on
// there).
var sparesChecked func()

// tailIn reports whether the scan of seg ended in a torn write or damage
// at the end of its records.
func (sc *scanner) tailIn(seg *segRef) bool {
	return (sc.torn != nil && sc.tornSeg == seg) || (sc.fail != nil && sc.failTail)
}

// rescan reads seg again from the end of its last good record.
func (sc *scanner) rescan(fr *frameReader, seg *segRef) error {
	if sc.tornSeg == seg {
		sc.torn, sc.tornSeg = nil, nil
	}
	if sc.failTail {
		sc.fail, sc.failTail = nil, false
	}
	rc, err := seg.openAt(sc.end)
	if err != nil {
		return fmt.Errorf("read audit log: %w", err)
	}
	defer rc.Close()
	fr.reset(rc, sc.end, fr.prealloc)
	return sc.runSegment(fr)
}

// inUse reports whether segs[k] is a segment that holds records: the
// writer begins each at its start. A segment missing from the numbering,
// or none, is not in use.
func inUse(segs []segRef, k int) (bool, error) {
	if k >= len(segs) || segs[k].next != "" {
		return false, nil
	}
	rc, err := segs[k].open()
	if err != nil {
		return false, fmt.Errorf("read audit log: %w", err)
	}
	defer rc.Close()
	var b [frameHeaderSize]byte
	n, err := io.ReadFull(rc, b[:])
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return false, fmt.Errorf("read audit log: %w", err)
	}
	return !allZero(b[:n]), nil
}

// allZeroAfter reports whether every segment after segs[k] holds only
// zeros. A segment missing from the numbering is not: the scan reads on
// to report it.
func allZeroAfter(segs []segRef, k int) (bool, error) {
	for j := k + 1; j < len(segs); j++ {
		if segs[j].next != "" {
			return false, nil
		}
		rc, err := segs[j].open()
		if err != nil {
			return false, fmt.Errorf("read audit log: %w", err)
		}
		at, err := firstNonZero(rc)
		rc.Close()
		if err != nil || at >= 0 {
			return false, err
		}
	}
	return true, nil
}
