package control

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"
)

// FuzzReadLine reads the lines of a stream through a small buffer, so
// that a line comes in many chunks, and checks each against the stream
// cut at its newlines: a line within the bound is given whole without
// its newline, a longer one is refused without being held, and a last
// line without a newline is the stream's end, not a line.
func FuzzReadLine(f *testing.F) {
	f.Add([]byte("{\"op\":\"status\"}\n"), uint16(64))
	f.Add([]byte("a\nbb\nccc\n"), uint16(3))
	f.Add([]byte("0123456789abcdef0123456789abcdef\n"), uint16(33))
	f.Add([]byte("0123456789abcdef0123456789abcdef\n"), uint16(32))
	f.Add([]byte("no newline"), uint16(100))
	f.Add([]byte("\n\n\n"), uint16(1))
	f.Add([]byte{}, uint16(0))
	f.Fuzz(func(t *testing.T, data []byte, bound uint16) {
		r := bufio.NewReaderSize(bytes.NewReader(data), 16)
		rest := data
		for {
			line, err := readLine(r, int(bound))
			if len(line) > int(bound) {
				t.Fatalf("a line of %d bytes under a bound of %d", len(line), bound)
			}
			i := bytes.IndexByte(rest, '\n')
			switch {
			case i >= 0 && i+1 <= int(bound):
				if err != nil || !bytes.Equal(line, rest[:i]) {
					t.Fatalf("line %q read as %q, %v", rest[:i], line, err)
				}
				rest = rest[i+1:]
				continue
			case i >= 0 || len(rest) > int(bound):
				if !errors.Is(err, errTooLong) || line != nil {
					t.Fatalf("a line over the bound %d (%q) read as %q, %v", bound, rest, line, err)
				}
			default:
				if err != io.EOF || line != nil {
					t.Fatalf("the end %q read as %q, %v", rest, line, err)
				}
			}
			return
		}
	})
}
