//go:build linux || darwin || freebsd

package audit

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// nextData returns the offset of the first byte at or after off that the
// file f holds on disk; a hole reads as zeros. It returns -1 when only a
// hole follows off, and off itself when the file system cannot tell.
func nextData(f *os.File, off int64) int64 {
	rc, err := f.SyscallConn()
	if err != nil {
		return off
	}
	data := off
	cerr := rc.Control(func(fd uintptr) {
		cur, err := unix.Seek(int(fd), 0, unix.SEEK_CUR)
		if err != nil {
			return
		}
		defer unix.Seek(int(fd), cur, unix.SEEK_SET)
		for {
			n, err := unix.Seek(int(fd), off, unix.SEEK_DATA)
			switch {
			case errors.Is(err, unix.EINTR):
				continue
			case errors.Is(err, unix.ENXIO):
				data = -1
			case err == nil && n >= off:
				data = n
			}
			return
		}
	})
	if cerr != nil {
		return off
	}
	return data
}
