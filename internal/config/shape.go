package config

import (
	"bytes"
	"fmt"
)

// Bounds on the shape of a configuration file, far above what a person
// writes: the TOML decoder's time and memory grow with the square of the
// nesting of inline tables and of the parts of a dotted key, and a file
// of MaxSize nested throughout would hold a reload for hours.
const (
	maxDepth = 32 // open brackets and braces
	maxDots  = 32 // dots between keys on one line
)

// checkShape refuses a file nested deeper than maxDepth, or with a line
// holding more than maxDots dots outside strings and comments. It reads
// strings and comments only well enough to skip them; the decoder judges
// the rest.
func checkShape(b []byte) error {
	depth, dots, line := 0, 0, 1
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case '\n':
			line++
			dots = 0
		case '#':
			if j := bytes.IndexByte(b[i:], '\n'); j >= 0 {
				i += j - 1
			} else {
				i = len(b)
			}
		case '"', '\'':
			delim := []byte{c}
			if bytes.HasPrefix(b[i:], []byte{c, c, c}) {
				delim = []byte{c, c, c}
			}
			j := i + len(delim)
			for j < len(b) && !bytes.HasPrefix(b[j:], delim) {
				if c == '"' && b[j] == '\\' {
					j++ // an escaped character, such as \"
				}
				if j < len(b) && b[j] == '\n' {
					line++
				}
				j++
			}
			// A multi-line string may end in one or two quotes of its
			// own before its closing three ("a""""): they are in it, not
			// the opening of another string that would hide the rest
			// of the file from this check.
			for k := 0; len(delim) == 3 && k < 2 && j+3 < len(b) && b[j+3] == c; k++ {
				j++
			}
			i = j + len(delim) - 1
		case '[', '{':
			if depth++; depth > maxDepth {
				return fmt.Errorf("%d: nested more than %d deep", line, maxDepth)
			}
		case ']', '}':
			depth = max(depth-1, 0)
		case '.':
			if dots++; dots > maxDots {
				return fmt.Errorf("%d: more than %d dots on a line outside strings (a key of that many parts)", line, maxDots)
			}
		}
	}
	return nil
}
