package audit

import (
	"io"
	"os"
)

// A program with the person's uid can put a file of terabytes that holds
// next to nothing on disk (truncate -s 1T) where the log or a segment
// was. Its holes read as zeros, and reading them would take hours: where
// a file is scanned for bytes that are not zero, holes are skipped, so
// that the scan takes time in proportion to the bytes on disk and gives
// the verdict that reading the zeros would.

// stream is a reader the caller gave, which is not closed after reading.
type stream struct{ io.Reader }

func (stream) Close() error { return nil }

// skipHole moves r past the hole at its position, when r reads a file or
// a section of one and the file system tells where the file's data lies,
// and returns how many bytes it skipped: zeros all. Any other reader is
// left where it is, and its zeros are read.
func skipHole(r io.Reader) (int64, error) {
	if s, ok := r.(stream); ok {
		r = s.Reader
	}
	var (
		f    *os.File
		sk   io.Seeker
		base int64
		end  int64 = -1
	)
	switch r := r.(type) {
	case *os.File:
		f, sk = r, r
	case *io.SectionReader:
		ra, off, n := r.Outer()
		var ok bool
		if f, ok = ra.(*os.File); !ok {
			return 0, nil
		}
		sk, base, end = r, off, n
	default:
		return 0, nil
	}
	cur, err := sk.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, nil
	}
	data := nextData(f, base+cur)
	if data == base+cur {
		return 0, nil
	}
	if end < 0 {
		fi, err := f.Stat()
		if err != nil {
			return 0, nil
		}
		end = fi.Size()
	}
	to := end
	if data >= 0 {
		to = min(data-base, end)
	}
	if to <= cur {
		return 0, nil
	}
	if _, err := sk.Seek(to, io.SeekStart); err != nil {
		return 0, err
	}
	return to - cur, nil
}

// firstNonZero returns the offset from r's position of the first byte r
// reads that is not zero, or -1 when all are zero to its end.
func firstNonZero(r io.Reader) (int64, error) {
	buf := make([]byte, 64<<10)
	var off int64
	for {
		n, err := skipHole(r)
		if err != nil {
			return -1, err
		}
		off += n
		k, err := r.Read(buf)
		for i, b := range buf[:k] {
			if b != 0 {
				return off + int64(i), nil
			}
		}
		off += int64(k)
		if err == io.EOF {
			return -1, nil
		}
		if err != nil {
			return -1, err
		}
	}
}
