package procid

import (
	"bytes"
	"encoding/binary"
)

// A process's command line is what it says it is running: it can rewrite
// it at will, so it is shown as a claim and used for display choices (a
// preselected subject, candidate host names), never for authority.

// ParseCmdline parses the contents of Linux's /proc/PID/cmdline: the
// arguments, each ended by a NUL. It returns nil for an empty one (a
// kernel thread, or a process that cleared it).
func ParseCmdline(b []byte) []string {
	b = bytes.TrimRight(b, "\x00")
	if len(b) == 0 {
		return nil
	}
	return splitNUL(b, -1)
}

// ParseProcArgs2 parses macOS's sysctl KERN_PROCARGS2 buffer: argc (a
// native-endian int32), the executable path ended by a NUL, NUL padding,
// then argc arguments each ended by a NUL (the environment follows and is
// not returned). A truncated buffer yields what it holds.
func ParseProcArgs2(b []byte) (exe string, argv []string) {
	if len(b) < 4 {
		return "", nil
	}
	argc := int(int32(binary.NativeEndian.Uint32(b)))
	b = b[4:]
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return string(b), nil
	}
	exe, b = string(b[:i]), bytes.TrimLeft(b[i:], "\x00")
	if argc <= 0 || len(b) == 0 {
		return exe, nil
	}
	return exe, splitNUL(b, argc)
}

// splitNUL returns the first n (all, when n < 0) NUL-ended strings of b;
// a last one without its NUL counts too.
func splitNUL(b []byte, n int) []string {
	var out []string
	for len(b) > 0 && n != 0 {
		s, rest, _ := bytes.Cut(b, []byte{0})
		out = append(out, string(s))
		b, n = rest, n-1
	}
	return out
}
