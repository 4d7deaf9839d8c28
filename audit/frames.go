package audit

import (
	"bufio"
	"encoding/binary"
	"io"
)

// frame is one record read from a log. Body and payload alias the reader's
// buffer and are valid until the next call to next.
type frame struct {
	off     int64 // byte offset of the length field
	size    int64 // bytes on disk, length field to link
	typ     byte
	seq     uint64
	prev    [32]byte
	payload []byte
	link    [32]byte
}

// tail describes bytes after the last intact frame.
type tail struct {
	off    int64  // where the bad bytes start
	n      int64  // how many bytes follow, to the end of the input
	torn   bool   // true: a record a crash left unfinished; false: damage
	reason string // what is wrong, for the report
}

func (t *tail) Error() string { return t.reason }

// frameReader reads frames and checks each one's length field and link. It
// never holds more than one frame (maxFrame bytes) in memory, and when it
// reads past the end of a pre-allocated segment's records, at most one
// write's worth (maxWrite bytes).
type frameReader struct {
	r   *bufio.Reader
	src io.Reader // what r reads
	off int64
	buf []byte
	hdr [frameHeaderSize]byte // length field of the frame last read
	lk  *linker
	// prealloc is set for a pre-allocated segment (version 2): zero bytes
	// after its records are free space, not a crash.
	prealloc bool
}

func newFrameReader(r io.Reader) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(r, 64<<10), src: r, lk: newLinker()}
}

// reset makes fr read r from offset off.
func (fr *frameReader) reset(r io.Reader, off int64, prealloc bool) {
	fr.r.Reset(r)
	fr.src = r
	fr.off = off
	fr.prealloc = prealloc
}

// next returns the next intact frame; io.EOF at a clean end; a *tail when the
// input ends in a torn record or holds a damaged one; or a read error.
func (fr *frameReader) next() (*frame, error) {
	start := fr.off
	fr.hdr = [frameHeaderSize]byte{}
	hdr := fr.hdr[:]
	got, err := io.ReadFull(fr.r, hdr)
	if err == io.EOF {
		return nil, io.EOF
	}
	if err == io.ErrUnexpectedEOF {
		const reason = "the last record is incomplete: its length field was cut short"
		if fr.prealloc {
			// The writer goes on to the next segment when a write does
			// not fit: the free space a segment ends with may be
			// shorter than a length field.
			return nil, fr.classifyFree(start, hdr[:got], reason)
		}
		return nil, &tail{off: start, n: int64(got), torn: true, reason: reason}
	}
	if err != nil {
		return nil, err
	}
	n, ok := lengthOK(hdr)
	if !ok {
		if fr.prealloc {
			return nil, fr.classifyFree(start, hdr,
				"the length field is corrupt (it fails its complement check or is out of range)")
		}
		return nil, fr.classify(start, hdr, false, 0,
			"the length field is corrupt (it fails its complement check or is out of range)")
	}
	need := n + linkSize
	if cap(fr.buf) < need {
		fr.buf = make([]byte, need, max(need, 4096))
	}
	buf := fr.buf[:need]
	got, err = io.ReadFull(fr.r, buf)
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return nil, &tail{off: start, n: frameHeaderSize + int64(got), torn: true,
			reason: "the last record is incomplete: a crash cut it short"}
	}
	if err != nil {
		return nil, err
	}
	body := buf[:n]
	var stored [32]byte
	copy(stored[:], buf[n:])
	if fr.lk.link(body) != stored {
		const msg = "the record's link does not match its content: the record was altered"
		if fr.prealloc {
			return nil, fr.classifyFree(start, append(hdr, buf...), msg)
		}
		return nil, fr.classify(start, hdr, true, n, msg)
	}
	f := &frame{
		off:     start,
		size:    int64(frameHeaderSize + need),
		typ:     body[0],
		seq:     binary.BigEndian.Uint64(body[1:9]),
		payload: body[bodyFixedSize:],
		link:    stored,
	}
	copy(f.prev[:], body[9:41])
	fr.off += f.size
	return f, nil
}

// classify decides whether bad bytes at start are a torn tail or damage. It
// reads the rest of the input. The bytes from start to the end are a torn
// tail when, after removing zero filler at the end, what remains is a proper
// prefix of a frame with an intact length field, or of its length field.
// Zero filler is a run of zero bytes that reaches the end of the input and
// begins at start, on a tornAlign boundary, or is at least minZeroFill bytes
// long: what a file system can leave where a crash lost written data. A
// record's own bytes end in such a run only by chance (a link ending in 32
// zero bytes, or a zero at a block boundary), so changing a byte of the last
// record to anything but zero is always damage. Anything else is damage.
// When readBody is set, the frame's body and link (n+linkSize bytes) were
// already read into fr.buf.
func (fr *frameReader) classify(start int64, hdr []byte, readBody bool, n int, reason string) error {
	pos := start + frameHeaderSize
	lastNZ := int64(-1) // absolute offset of the last non-zero byte
	for i, b := range hdr {
		if b != 0 {
			lastNZ = start + int64(i)
		}
	}
	if readBody {
		for i, b := range fr.buf[:n+linkSize] {
			if b != 0 {
				lastNZ = pos + int64(i)
			}
		}
		pos += int64(n + linkSize)
	}
	// Scan the rest of the input.
	end, nz, err := fr.scanRest(pos, nil)
	if err != nil {
		return err
	}
	if nz >= 0 {
		lastNZ = nz
	}
	fr.off = end
	// z: where the zero filler a crash may leave begins (end if none).
	z := end
	if r := lastNZ + 1; r < end {
		switch {
		case r <= start, r%tornAlign == 0, end-r >= minZeroFill:
			z = max(r, start)
		default:
			// A shorter run counts from a block boundary inside it.
			if a := (r + tornAlign - 1) / tornAlign * tornAlign; a < end {
				z = a
			}
		}
	}
	kept := z - start
	torn := false
	switch {
	case kept < frameHeaderSize:
		torn = true
	default:
		if m, ok := lengthOK(hdr); ok {
			torn = kept < int64(frameHeaderSize+m+linkSize)
		}
	}
	t := &tail{off: start, n: end - start, torn: torn, reason: reason}
	if torn {
		switch {
		case kept == 0:
			t.reason = "the file ends in zero bytes where a record should start: a crash left them"
		case z < end:
			t.reason = "the last record is incomplete and followed by zero bytes: a crash cut it short"
		default:
			t.reason = "the last record is incomplete: a crash cut it short"
		}
	}
	return t
}

// classifyFree decides what bad bytes at start of a pre-allocated segment
// are; read holds the bytes from start already read. It reads the rest of
// the segment. All zero: the free space after the records, a clean end
// (io.EOF). Otherwise the bytes are a torn tail when a crash can have left
// them: they all lie within one write (maxWrite bytes) of start, and either
// some 512-byte block among them that the write covered is all zero (a
// block the disk did not write before the power failed, the later ones
// having been written) or, as in an appended file, they are a proper prefix
// of a record with an intact length field. Anything else is damage.
func (fr *frameReader) classifyFree(start int64, read []byte, reason string) error {
	// Keep the first maxWrite+tornAlign bytes after start for the block
	// check; beyond them only the last non-zero offset matters.
	keep := make([]byte, 0, min(maxWrite+tornAlign, 1<<16))
	keep = append(keep, read...)
	lastNZ := int64(-1)
	for i, b := range read {
		if b != 0 {
			lastNZ = start + int64(i)
		}
	}
	pos, nz, err := fr.scanRest(start+int64(len(read)), func(chunk []byte, zeros int64) {
		if room := maxWrite + tornAlign - len(keep); room > 0 {
			if zeros > 0 {
				keep = append(keep, make([]byte, min(zeros, int64(room)))...)
			} else {
				keep = append(keep, chunk[:min(len(chunk), room)]...)
			}
		}
	})
	if err != nil {
		return err
	}
	if nz >= 0 {
		lastNZ = nz
	}
	fr.off = pos
	if lastNZ < 0 {
		return io.EOF
	}
	t := &tail{off: start, n: lastNZ + 1 - start, reason: reason}
	switch {
	case lastNZ-start >= maxWrite:
		t.n = pos - start
		t.reason = "there are bytes beyond the end of the records, further than one write reaches: they were put there by something other than the writer"
		return t
	case zeroBlockBefore(keep, start, lastNZ):
		t.torn = true
		t.reason = "the last write is incomplete: a block of it is zero and later bytes were written; a power failure left it"
	case t.n < frameHeaderSize:
		t.torn = true
		t.reason = "the last record is incomplete: its length field was cut short"
	default:
		hdr := keep[:min(len(keep), frameHeaderSize)]
		if len(hdr) == frameHeaderSize {
			if m, ok := lengthOK(hdr); ok && t.n < int64(frameHeaderSize+m+linkSize) {
				t.torn = true
				t.reason = "the last record is incomplete and followed by zero bytes: a crash cut it short"
			}
		}
	}
	return t
}

// zeroBlockBefore reports whether, among the bytes b that start at offset
// start, a 512-byte block (aligned in the file) that ends before lastNZ is
// all zero over its part at or after start.
func zeroBlockBefore(b []byte, start, lastNZ int64) bool {
	for blk := start / tornAlign * tornAlign; blk+tornAlign <= lastNZ; blk += tornAlign {
		from, to := max(blk, start)-start, blk+tornAlign-start
		if to > int64(len(b)) {
			return false
		}
		if allZero(b[from:to]) {
			return true
		}
	}
	return false
}

// scanRest reads the rest of the input from offset pos, passing each chunk
// to see when it is set, and returns the offset of the end and of the last
// non-zero byte (-1 when there is none). A hole in a file is not read: see
// is told how many zero bytes it holds instead of a chunk.
func (fr *frameReader) scanRest(pos int64, see func(chunk []byte, zeros int64)) (end, lastNZ int64, err error) {
	lastNZ = -1
	var chunk [32 << 10]byte
	for {
		if fr.r.Buffered() == 0 {
			n, err := skipHole(fr.src)
			if err != nil {
				return pos, lastNZ, err
			}
			if n > 0 && see != nil {
				see(nil, n)
			}
			pos += n
		}
		k, err := fr.r.Read(chunk[:])
		if see != nil {
			see(chunk[:k], 0)
		}
		for i := k - 1; i >= 0; i-- {
			if chunk[i] != 0 {
				lastNZ = pos + int64(i)
				break
			}
		}
		pos += int64(k)
		if err == io.EOF {
			return pos, lastNZ, nil
		}
		if err != nil {
			return pos, lastNZ, err
		}
	}
}
