package procid

import (
	"errors"
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"
)

// What shows that a pinned process executed a new program (an exec keeps
// its pid, its start time and its pidfd):
//
//   - its executable: /proc/PID/exe names another file (device, inode);
//   - its address space: a descriptor of /proc/PID/maps opened when the
//     process was pinned holds the address space (mm) the process had
//     then. An exec gives the process a new one and drops the old, and a
//     read through the held descriptor then returns nothing, while the
//     process is alive. Opening it needs only PTRACE_MODE_READ, which
//     Yama's ptrace_scope=1 does not restrict;
//   - its layout: the code, stack, data, heap, argument and environment
//     addresses of /proc/PID/stat (read through a held descriptor) change
//     with a new address space, at once under address space
//     randomization, and where the new program's arguments or
//     environment differ in size even without it.
//
// Any one of them ends the identity (ErrChanged). A program written to
// hide an exec must defeat all three: keep the old address space alive in
// a clone(CLONE_VM) child that does not exec (the held read still sees
// it), run with the same executable, and give the new address space the
// old layout (randomization off and arguments of the same sizes, or
// prctl(PR_SET_MM_MAP), which needs no privilege). Such a program already
// runs code of its choosing in the approved process and needs no exec to
// do anything else; see the package documentation.

// held is what a pidfdPin keeps open to see an exec: /proc/PID (for the
// executable), its stat and its maps. A descriptor that could not be
// opened (another user's process) is -1 and its evidence is missing.
type held struct {
	dir, stat, maps int
}

var noHeld = held{dir: -1, stat: -1, maps: -1}

// hold opens /proc/PID (O_PATH: a handle to look up names under, bound
// to the process, not to its pid) and, relative to it, stat and maps.
// The pidfd was opened first: if the pid had been reused in between, the
// pidfd would show the exit, and finish checks it after the process is
// inspected.
func (p *pidfdPin) hold(t *Table, pid int) error {
	dir, err := unix.Open(t.Root+"/"+strconv.Itoa(pid), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return gone(pid, err)
	}
	h := held{dir: dir, stat: -1, maps: -1}
	if h.stat, err = unix.Openat(dir, "stat", unix.O_RDONLY|unix.O_CLOEXEC, 0); err != nil {
		h.close()
		return gone(pid, err)
	}
	// Another user's process (root's) may not be readable: no evidence.
	h.maps, _ = unix.Openat(dir, "maps", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if h.maps < 0 {
		h.maps = -1
	}
	p.mu.Lock()
	p.held = h
	p.mu.Unlock()
	return nil
}

func (h *held) close() {
	for _, fd := range []int{h.dir, h.stat, h.maps} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
	*h = noHeld
}

// look checks the executable, the address space and the layout, and
// returns the stat it read and the key of the executable.
func (p *pidfdPin) look(t *Table, proc *Process) (Stat, exeKey, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return Stat{}, exeKey{}, fmt.Errorf("pid %d: %w", proc.PID, ErrGone)
	}
	h := &p.held
	if h.dir < 0 {
		return startPin{}.look(t, proc)
	}
	var st unix.Stat_t
	err := unix.Fstatat(h.dir, "exe", &st, 0)
	hidden := err == unix.EACCES || err == unix.EPERM
	var key exeKey
	switch {
	case hidden && proc.Exe.Hidden:
		// Not dumpable then and now: nothing of its program shows, as
		// when it was identified (its layout reads as zeros).
	case hidden:
		// It stopped showing what it runs, as an exec of a set-id
		// program does: nothing says it runs the same program.
		return Stat{}, key, fmt.Errorf("pid %d no longer shows its executable: %w", proc.PID, ErrChanged)
	case errors.Is(err, unix.ENOENT) && !pidfdExited(p.fd):
		// Alive, but its main thread shows no executable: the main
		// thread has exited, as it does while another thread executes
		// a program (until the new program takes its place), or for
		// good. Nothing says it runs the program it did.
		return Stat{}, key, fmt.Errorf("pid %d shows no executable while it lives: %w", proc.PID, ErrChanged)
	case err != nil:
		return Stat{}, key, gone(proc.PID, err)
	case proc.Exe.Hidden:
		// Identified while not dumpable: a program that shows is one it
		// executed since.
		return Stat{}, key, fmt.Errorf("pid %d executes a program it did not show: %w", proc.PID, ErrChanged)
	case st.Dev != proc.Exe.Dev || st.Ino != proc.Exe.Ino:
		return Stat{}, key, fmt.Errorf("pid %d executes another file: %w", proc.PID, ErrChanged)
	default:
		key = keyOfStat(&st)
	}
	if h.maps >= 0 {
		var b [1]byte
		n, err := preadRetry(h.maps, b[:])
		if err == nil && n == 0 {
			return Stat{}, key, fmt.Errorf("pid %d has a new address space: %w", proc.PID, ErrChanged)
		}
	}
	s, err := p.readStat(proc.PID)
	if err != nil {
		return Stat{}, key, err
	}
	return s, key, sameLayout(proc, &s)
}

// exe reads the executable through the held /proc/PID (by path when
// none is held).
func (p *pidfdPin) exe(t *Table, pid int) (Exe, exeKey, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return Exe{}, exeKey{}, fmt.Errorf("pid %d: %w", pid, ErrGone)
	}
	dir := p.held.dir
	if dir < 0 {
		dir = noDir
	}
	return t.exeOf(pid, dir)
}

func (p *pidfdPin) stat(t *Table, proc *Process) (Stat, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return Stat{}, fmt.Errorf("pid %d: %w", proc.PID, ErrGone)
	}
	if p.held.stat < 0 {
		return t.Stat(proc.PID)
	}
	return p.readStat(proc.PID)
}

// readStat reads the held stat descriptor; p.mu is held.
func (p *pidfdPin) readStat(pid int) (Stat, error) {
	var buf [1024]byte
	n, err := preadRetry(p.held.stat, buf[:])
	if err != nil {
		return Stat{}, gone(pid, err)
	}
	return ParseStat(buf[:n])
}

func preadRetry(fd int, b []byte) (int, error) {
	for {
		n, err := unix.Pread(fd, b, 0)
		if err != unix.EINTR {
			return n, err
		}
	}
}
