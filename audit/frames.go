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
// never holds more than one frame (maxFrame bytes) in memory.
type frameReader struct {
	r   *bufio.Reader
	off int64
	buf []byte
	hdr [frameHeaderSize]byte // length field of the frame last read
	lk  *linker
}

func newFrameReader(r io.Reader) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(r, 16<<10), lk: newLinker()}
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
		return nil, &tail{off: start, n: int64(got), torn: true,
			reason: "the last record is incomplete: its length field was cut short"}
	}
	if err != nil {
		return nil, err
	}
	n, ok := lengthOK(hdr)
	if !ok {
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
		return nil, fr.classify(start, hdr, true, n, "the record's link does not match its content: the record was altered")
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
	var chunk [4096]byte
	for {
		k, err := fr.r.Read(chunk[:])
		for i := k - 1; i >= 0; i-- {
			if chunk[i] != 0 {
				lastNZ = pos + int64(i)
				break
			}
		}
		pos += int64(k)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	end := pos
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
