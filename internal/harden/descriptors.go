package harden

import (
	"os"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// KeepInherited marks closed on exec every descriptor above standard
// error that would pass to the programs the process starts: those it
// inherited from whatever started it (Go opens its own closed on exec).
// The programs the gateway starts (askpass, notifiers) then get none of
// them. It returns them, in order, for a program that should get them
// all the same (the command of "postern agent COMMAND", as ssh-agent's
// does).
func KeepInherited() []int {
	entries, err := os.ReadDir(fdDir)
	if err != nil {
		return nil
	}
	var fds []int
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}
		// The directory's own descriptor, closed by now, fails here.
		if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil && flags&unix.FD_CLOEXEC == 0 {
			unix.CloseOnExec(fd)
			fds = append(fds, fd)
		}
	}
	slices.Sort(fds)
	return fds
}
