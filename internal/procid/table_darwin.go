package procid

import (
	"bytes"
	"fmt"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// On macOS there is no /proc: facts come from sysctl(KERN_PROC_PID) and
// KERN_PROCARGS2. The executable is found by path, which is weaker than
// Linux's /proc/PID/exe; macOS code identity (audit tokens and code
// signatures) is the platform's real answer and needs cgo.

func (t *Table) kinfo(pid int) (*unix.KinfoProc, error) {
	k, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return nil, gone(pid, err)
	}
	if int(k.Proc.P_pid) != pid {
		return nil, fmt.Errorf("pid %d: %w", pid, ErrGone)
	}
	return k, nil
}

// Stat reads the process's parent, session and start time.
func (t *Table) Stat(pid int) (Stat, error) {
	k, err := t.kinfo(pid)
	if err != nil {
		return Stat{}, err
	}
	tv := k.Proc.P_starttime
	start := uint64(tv.Sec)*clockTicks + uint64(tv.Usec)*clockTicks/1e6
	comm := string(bytes.TrimRight(k.Proc.P_comm[:], "\x00"))
	return Stat{Comm: comm, PPID: int(k.Eproc.Ppid), Session: int(k.Eproc.Pgid), StartTicks: start}, nil
}

// UID returns the process's real uid.
func (t *Table) UID(pid int) (uint32, error) {
	k, err := t.kinfo(pid)
	if err != nil {
		return 0, err
	}
	return k.Eproc.Pcred.P_ruid, nil
}

type exeKey struct {
	dev, ino     uint64
	size         int64
	mtime, ctime syscall.Timespec
}

// exeFile returns the executable path from KERN_PROCARGS2.
func (t *Table) exeFile(pid int) string {
	exe, _ := t.procArgs(pid)
	return exe
}

// Argv returns what the process says it is running, from KERN_PROCARGS2
// (a claim; see [ParseProcArgs2]). It is nil when the process is gone or
// belongs to another user.
func (t *Table) Argv(pid int) []string {
	_, argv := t.procArgs(pid)
	return argv
}

func (t *Table) procArgs(pid int) (exe string, argv []string) {
	b, err := unix.SysctlRaw("kern.procargs2", pid)
	if err != nil {
		return "", nil
	}
	return ParseProcArgs2(b)
}

// noDir: there are no held descriptors of a process here.
const noDir = -1

func (t *Table) exeLink(pid, _ int) string { return t.exeFile(pid) }

func (t *Table) exeID(pid, _ int) (Exe, exeKey, error) { return t.ExeID(pid) }

// ExeID stats the executable by path.
func (t *Table) ExeID(pid int) (Exe, exeKey, error) {
	path := t.exeFile(pid)
	if path == "" {
		return Exe{}, exeKey{}, fmt.Errorf("pid %d: %w", pid, ErrGone)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return Exe{}, exeKey{}, gone(pid, err)
	}
	k := exeKey{dev: uint64(st.Dev), ino: st.Ino, size: st.Size, mtime: st.Mtimespec, ctime: st.Ctimespec}
	return Exe{Dev: k.dev, Ino: k.ino, Size: k.size}, k, nil
}

// BootTime returns the time the machine booted.
func (t *Table) BootTime() time.Time {
	tv, err := unix.SysctlTimeval("kern.boottime")
	if err != nil {
		return time.Time{}
	}
	return time.Unix(tv.Sec, int64(tv.Usec)*1000)
}
