package audit

import (
	"os"

	"golang.org/x/sys/unix"
)

// datasync makes written data durable; file times need not be.
func datasync(f *os.File) error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}
