package confine

import (
	"golang.org/x/sys/unix"
)

// TerminalMaySend reports whether a SIGINT or SIGQUIT this process got
// may have come from its controlling terminal: the process is in the
// terminal's foreground process group, where the terminal sends them to
// every process, the run's program among them. When it is not (no
// controlling terminal, as under a harness or a service, or a background
// job), the signal was sent to this process alone (kill), and is the
// run's to be passed on, or it would go nowhere.
func TerminalMaySend() bool {
	fd, err := unix.Open("/dev/tty", unix.O_RDONLY|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false // no controlling terminal
	}
	defer unix.Close(fd)
	fg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	return err == nil && fg == unix.Getpgrp()
}
