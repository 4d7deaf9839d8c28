package askpass

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// newImage makes an empty memfd for a copy of the program, executable
// (MFD_EXEC: where vm.memfd_noexec makes new memfds non-executable by
// default; a kernel before 6.3 knows no such flag and makes them
// executable). A variable for tests.
var newImage = func() (*os.File, error) {
	fd, err := unix.MemfdCreate("askpass", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|unix.MFD_EXEC)
	if errors.Is(err, unix.EINVAL) {
		fd, err = unix.MemfdCreate("askpass", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	}
	if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
		return nil, fmt.Errorf("%w: %w", errImageNotExecutable, err)
	}
	if err != nil {
		return nil, fmt.Errorf("making a copy of the program: %w", err)
	}
	return os.NewFile(uintptr(fd), "memfd:askpass"), nil
}

// sealImage seals the copy in f against every change and returns it
// opened again read-only, f closed: a file open for writing anywhere
// cannot be executed (ETXTBSY).
func sealImage(f *os.File) (*os.File, error) {
	defer f.Close()
	seals := unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, seals); err != nil {
		return nil, fmt.Errorf("sealing the copy of the program: %w", err)
	}
	ro, err := os.OpenFile(fmt.Sprintf("/proc/self/fd/%d", f.Fd()), os.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening the copy of the program: %w", err)
	}
	return ro, nil
}
