package confine

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// CloseInheritedOnExec marks every open descriptor above standard error
// close-on-exec. Go opens its own that way, but not those the process
// inherited: a shell's "exec 8<~/.local/state/postern" before "postern
// run" would otherwise pass a descriptor of a hidden tree (or of the
// gateway's control socket) into the run, through every mount that hides
// its path. It is called before the run's program is started.
func CloseInheritedOnExec() error {
	ents, err := os.ReadDir("/dev/fd")
	if err != nil {
		return err
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}
		// The directory's own descriptor, closed by now, fails with
		// EBADF; any other failure is the caller's to know.
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil && err != unix.EBADF {
			return err
		}
	}
	return nil
}
