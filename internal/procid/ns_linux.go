package procid

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ioctls of nsfs (linux/nsfs.h).
const (
	nsGetParent   = 0xb702
	nsGetOwnerUID = 0xb704
)

// OwnNamespaces returns this process's namespaces.
func OwnNamespaces() (Namespaces, error) { return readNamespaces("/proc/self/ns/") }

func readNamespaces(dir string) (Namespaces, error) {
	var n Namespaces
	for name, dst := range map[string]*uint64{"user": &n.User, "pid": &n.PID, "mnt": &n.Mnt} {
		var st unix.Stat_t
		if err := unix.Stat(dir+name, &st); err != nil {
			if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
				return Namespaces{}, ErrUnreadable
			}
			return Namespaces{}, err
		}
		*dst = st.Ino
	}
	return n, nil
}

// Namespaces reads the peer's namespaces through /proc/PID/ns, and checks
// afterwards that the pin still holds: the links read were the pinned
// process's.
func (p *Peer) Namespaces() (Namespaces, error) {
	n, err := readNamespaces(p.table.path(p.PID, "ns/"))
	if err != nil {
		return Namespaces{}, fmt.Errorf("pid %d: %w", p.PID, gone(p.PID, err))
	}
	if err := p.pin.alive(p.table, &p.Process); err != nil {
		return Namespaces{}, err
	}
	return n, nil
}

// InNamespaces reports whether the peer lives inside ns: in ns's user or pid
// namespace or one nested in them (walking up with NS_GET_PARENT), or in
// ns's mount namespace. It reads through /proc/PID/ns and checks the pin
// afterwards. ErrUnreadable means the links could not be read.
func (p *Peer) InNamespaces(ns Namespaces) (bool, error) {
	in := false
	for _, c := range []struct {
		name   string
		target uint64
		nested bool
	}{{"user", ns.User, true}, {"pid", ns.PID, true}, {"mnt", ns.Mnt, false}} {
		fd, err := unix.Open(p.table.path(p.PID, "ns/"+c.name), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
				return false, fmt.Errorf("pid %d: %w", p.PID, ErrUnreadable)
			}
			return false, gone(p.PID, err)
		}
		hit, err := nsChainHas(fd, c.target, c.nested)
		if err != nil {
			return false, fmt.Errorf("pid %d: %s namespace: %w", p.PID, c.name, err)
		}
		in = in || hit
	}
	if err := p.pin.alive(p.table, &p.Process); err != nil {
		return false, err
	}
	return in, nil
}

// nsChainHas reports whether the namespace open at fd, or (when nested) one
// of its ancestors, has inode target. It closes fd.
func nsChainHas(fd int, target uint64, nested bool) (bool, error) {
	for range maxWalk {
		var st unix.Stat_t
		err := unix.Fstat(fd, &st)
		if err != nil {
			unix.Close(fd)
			return false, err
		}
		if st.Ino == target {
			unix.Close(fd)
			return true, nil
		}
		if !nested {
			break
		}
		parent, err := unix.IoctlRetInt(fd, nsGetParent)
		unix.Close(fd)
		if err != nil {
			// EPERM: the parent is outside this process's reach, which
			// every namespace of a run is within.
			return false, nil
		}
		fd = parent
	}
	unix.Close(fd)
	return false, nil
}

// NamespaceOwner returns the uid that created the user namespace of the
// peer (as this process sees it).
func (p *Peer) NamespaceOwner() (int, error) {
	f, err := os.Open(p.table.path(p.PID, "ns/user"))
	if err != nil {
		return -1, gone(p.PID, err)
	}
	defer f.Close()
	uid, err := unix.IoctlGetUint32(int(f.Fd()), nsGetOwnerUID)
	if err != nil {
		return -1, err
	}
	if err := p.pin.alive(p.table, &p.Process); err != nil {
		return -1, err
	}
	return int(uid), nil
}

// PIDNamespaceDepth returns how many pid namespaces below this process's
// /proc the process lives (0: the same one), from the NSpid line of
// /proc/PID/status, which is readable even for a process that is not
// dumpable.
func (t *Table) PIDNamespaceDepth(pid int) (int, error) {
	b, err := os.ReadFile(t.path(pid, "status"))
	if err != nil {
		return 0, gone(pid, err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "NSpid:"); ok {
			n := 0
			for _, f := range strings.Fields(rest) {
				if _, err := strconv.Atoi(f); err == nil {
					n++
				}
			}
			if n == 0 {
				break
			}
			return n - 1, nil
		}
	}
	return 0, fmt.Errorf("pid %d: no NSpid line in status", pid)
}
