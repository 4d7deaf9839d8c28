package procid

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// inspectParent reads the identity facts of pid, as Inspect does, for an
// ancestry walk, in fewer reads: a pidfd opened first holds the process
// while its stat and executable are read, and the pidfd's own report
// (PIDFD_GET_INFO, Linux 6.13 and later) then gives its real uid and
// shows it still alive. A pidfd names one process for good, and a
// process alive after the reads held its pid throughout them, so the
// facts are that process's and no second read of its start time is
// needed; nor is a read of /proc/PID/status, whose text the kernel makes
// whole for every read. Where the report is missing, the uid comes from
// status and the pidfd is polled instead. A fake table (tests) and a
// kernel without pidfds inspect as Inspect does.
func (t *Table) inspectParent(pid int) (Process, error) {
	if t.Root != Host.Root {
		return t.Inspect(pid)
	}
	fd, err := unix.PidfdOpen(pid, 0)
	switch {
	case errors.Is(err, unix.ESRCH):
		return Process{}, fmt.Errorf("pid %d: %w", pid, ErrGone)
	case err != nil:
		return t.Inspect(pid)
	}
	defer unix.Close(fd)
	// Read as a pinned process is (its stat, its executable), with the
	// uid left for the pidfd's report.
	var later uint32
	p, _, err := t.inspect(pid, &later, &pidfdPin{fd: fd, held: noHeld})
	if err != nil {
		return Process{}, err
	}
	info := unix.PidfdInfo{Mask: unix.PIDFD_INFO_CREDS}
	switch err := unix.IoctlPidfdInfo(fd, &info); {
	case err == nil && info.Mask&unix.PIDFD_INFO_CREDS != 0:
		p.UID = info.Ruid
		return p, nil
	case errors.Is(err, unix.ESRCH):
		return Process{}, fmt.Errorf("pid %d: %w", pid, ErrGone)
	}
	if p.UID, err = t.UID(pid); err != nil {
		return Process{}, err
	}
	if pidfdExited(fd) {
		return Process{}, fmt.Errorf("pid %d: %w", pid, ErrGone)
	}
	return p, nil
}
