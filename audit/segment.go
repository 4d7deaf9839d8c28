package audit

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/postern/postern/internal/atomicfile"
	"github.com/postern/postern/internal/smallfile"
)

// A version 2 log is a series of segments, modelled on etcd's write-ahead
// log: the log's path is segment 0 and segment i is "<path>.%06d". Each
// segment is created at its full size, filled with zeros, synced and linked
// into its directory (synced too) before the writer needs it, by a
// goroutine that prepares the next segment while the current one fills.
// Records are then written over the zeros in place: the blocks are already
// allocated and written, and the file size does not change, so a durable
// append is one write and one fdatasync that has no metadata to flush.
// Zero bytes after a segment's records are free space, however few (fewer
// than a length field when the last write just fit). The writer moves to
// the next segment when a write does not fit; segment sizes start at
// SegmentSize and double up to maxSegmentSize, so a small log stays small.
//
// Readers go through the segments in order; a record never spans two. After
// a crash, a segment may end in a torn write (see frameReader.classifyFree);
// no later segment may then hold records. Spare segments, all zero, may
// follow the last one in use.
const (
	// DefaultSegmentSize is the size of a new log's first segment.
	DefaultSegmentSize = 1 << 20
	// minSegmentSize keeps room for the largest write in an empty segment.
	minSegmentSize = 4 * maxFrame
	// maxSegmentSize is the largest segment the writer makes.
	maxSegmentSize = 32 << 20
	// zeroChunk is the size of the writes that fill a new segment.
	zeroChunk = 1 << 20
)

// segmentName returns the file of segment i of the log at path.
func segmentName(path string, i int) string {
	if i == 0 {
		return path
	}
	return fmt.Sprintf("%s.%06d", path, i)
}

// segmentSize returns the size the writer gives segment i when the first
// is first bytes large.
func segmentSize(first int64, i int) int64 {
	size := first
	for ; i > 0 && size < maxSegmentSize; i-- {
		size *= 2
	}
	return max(first, min(size, maxSegmentSize))
}

// segmentIndexes returns the indexes of the segments beside the log at path
// (not 0), sorted: of the files named as segmentName names them.
func segmentIndexes(path string) ([]int, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), base+".")
		if !ok || len(rest) < 6 || strings.Trim(rest, "0123456789") != "" {
			continue
		}
		// Only the name the writer gives segment i (segmentName): one
		// with more leading zeros is another file, not a second segment
		// i.
		if i, err := strconv.Atoi(rest); err == nil && i > 0 && e.Name() == filepath.Base(segmentName(base, i)) {
			out = append(out, i)
		}
	}
	slices.Sort(out)
	return out, nil
}

// segRef is one segment to read.
type segRef struct {
	index int
	name  string // shown in findings: the file's base name
	path  string // "" for a stream given by the caller
	r     io.Reader
	// next, set, makes this the segment missing from the numbering, the
	// last of a reader's list: next is the one present after it.
	next string
}

// open opens the segment to read it. Anything but a regular file (a FIFO
// nobody writes to, a link to /dev/zero: a program with the person's uid
// may put either where a segment was) is an error that names it, never a
// read that waits or goes on for ever.
func (s *segRef) open() (io.ReadCloser, error) {
	if s.next != "" {
		return nil, s.missing()
	}
	if s.path == "" {
		return stream{s.r}, nil
	}
	f, _, err := smallfile.Open(s.path)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// openAt opens the segment to read it from offset off.
func (s *segRef) openAt(off int64) (io.ReadCloser, error) {
	rc, err := s.open()
	if err != nil || off == 0 {
		return rc, err
	}
	if sk, ok := rc.(io.Seeker); ok {
		_, err = sk.Seek(off, io.SeekStart)
	} else {
		_, err = io.CopyN(io.Discard, rc, off)
	}
	if err != nil {
		rc.Close()
		return nil, err
	}
	return rc, nil
}

// logSegments lists the segments of the log at path, in order, from segment
// first on. A gap in the numbering is an error naming the missing segment.
func logSegments(path string, first int) ([]segRef, error) {
	out, err := readSegments(path, first)
	if n := len(out); err == nil && n > 0 && out[n-1].next != "" {
		return nil, out[n-1].missing()
	}
	return out, err
}

// readSegments lists the segments of the log at path, in order, from
// segment first on, for a reader: a gap in the numbering ends the list
// with the missing segment (segRef.next set), which the scan reports as
// a finding after it verified the segments before it.
func readSegments(path string, first int) ([]segRef, error) {
	idx, err := segmentIndexes(path)
	if err != nil {
		return nil, err
	}
	var out []segRef
	if first == 0 {
		out = append(out, segRef{index: 0, name: filepath.Base(path), path: path})
	}
	for k, i := range idx {
		if i != k+1 {
			return append(out, segRef{index: k + 1, name: filepath.Base(segmentName(path, k+1)), next: filepath.Base(segmentName(path, i))}), nil
		}
		if i >= first {
			out = append(out, segRef{index: i, name: filepath.Base(segmentName(path, i)), path: segmentName(path, i)})
		}
	}
	return out, nil
}

// missing is the error of a segment missing from the numbering.
func (s *segRef) missing() error {
	return fmt.Errorf("%w: segment %s is missing (the next one present is %s)", ErrSegmentMissing, s.name, s.next)
}

// ErrSegmentMissing reports a log whose segments are not numbered
// contiguously.
var ErrSegmentMissing = errors.New("audit log segment missing")

// segment is a segment file the writer holds.
type segment struct {
	index    int
	path     string
	f        *os.File
	size     int64    // the file's size
	off      int64    // end of the records
	last     [32]byte // the link of the record that ends at off, when off > 0
	dev, ino uint64
	prealloc bool // false for the first file of a version 1 log, never written again
}

// createSegment makes segment index of the log at path, size bytes of
// zeros, durable and linked into the directory.
func createSegment(path string, index int, size int64) (*segment, error) {
	name := segmentName(path, index)
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create audit log segment: %w", err)
	}
	s := &segment{index: index, path: name, f: f, size: size, prealloc: true}
	fail := func(err error) (*segment, error) {
		f.Close()
		os.Remove(name)
		return nil, fmt.Errorf("create audit log segment %s: %w", name, err)
	}
	if err := fillSegment(f, size); err != nil {
		return fail(err)
	}
	fi, err := f.Stat()
	if err != nil {
		return fail(err)
	}
	s.dev, s.ino, _ = fileID(fi)
	return s, nil
}

// openSegment opens an existing segment for writing at off, where the
// record whose link is last ends.
func openSegment(path string, index int, off int64, last [32]byte, prealloc bool) (*segment, error) {
	name := segmentName(path, index)
	f, err := os.OpenFile(name, os.O_RDWR|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open audit log segment: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open audit log segment: %w", err)
	}
	s := &segment{index: index, path: name, f: f, size: fi.Size(), off: off, last: last, prealloc: prealloc}
	s.dev, s.ino, _ = fileID(fi)
	return s, nil
}

// isSpare reports whether the segment file holds nothing at all: it is
// all zeros, as the writer makes it. A write into a segment starts at its
// beginning, so one whose first bytes are zero holds no record; bytes
// further on are none a writer put there, and the file is left for
// verification to report, not removed.
func isSpare(name string) (bool, error) {
	f, _, err := smallfile.Open(name)
	if err != nil {
		return false, err
	}
	defer f.Close()
	at, err := firstNonZero(f)
	if err != nil {
		return false, err
	}
	return at < 0, nil
}

// removeSpares removes the spare segments after the last one in use and
// returns the index of that one.
func removeSpares(path string, idx []int) (last int, err error) {
	last = 0
	removed := false
	for k := len(idx) - 1; k >= 0; k-- {
		name := segmentName(path, idx[k])
		spare, err := isSpare(name)
		if err != nil {
			return 0, fmt.Errorf("open audit log: %w", err)
		}
		if !spare {
			last = idx[k]
			break
		}
		if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return 0, fmt.Errorf("open audit log: remove the spare segment %s: %w", name, err)
		}
		removed = true
	}
	if removed {
		if err := atomicfile.SyncDir(filepath.Dir(path)); err != nil {
			return 0, fmt.Errorf("open audit log: %w", err)
		}
	}
	return last, nil
}

// fillSegment makes f, a segment, size bytes of zeros, durable and linked
// in its directory.
func fillSegment(f *os.File, size int64) error {
	zeros := make([]byte, min(size, zeroChunk))
	for off := int64(0); off < size; off += int64(len(zeros)) {
		if _, err := f.WriteAt(zeros[:min(int64(len(zeros)), size-off)], off); err != nil {
			return err
		}
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return atomicfile.SyncDir(filepath.Dir(f.Name()))
}
