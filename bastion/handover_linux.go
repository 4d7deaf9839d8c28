package bastion

import (
	"os"

	"golang.org/x/sys/unix"
)

// handOver returns a file that holds b, for a reader that takes only
// names: on Linux a memory file (memfd), which no other process can
// reach (the gateway is not dumpable) and which is read as a regular
// file, without a goroutine to fill it; a pipe where no memfd can be
// made.
func handOver(b []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate("known_hosts", unix.MFD_CLOEXEC)
	if err != nil {
		return pipeHandOver(b)
	}
	f := os.NewFile(uintptr(fd), "known_hosts")
	if _, err := f.Write(b); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
