package procid

import "golang.org/x/sys/unix"

// ChildExited reports whether the child pid of this process has ended,
// without reaping it (waitid with WNOWAIT).
func ChildExited(pid int) bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	return err == nil && info.Signo != 0
}
