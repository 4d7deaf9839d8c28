package procid

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func (t *Table) path(pid int, name string) string {
	return t.Root + "/" + strconv.Itoa(pid) + "/" + name
}

// Stat reads /proc/PID/stat. A missing process is reported as ErrGone.
func (t *Table) Stat(pid int) (Stat, error) {
	var buf [1024]byte
	n, err := readSmall(t.path(pid, "stat"), buf[:])
	if err != nil {
		return Stat{}, gone(pid, err)
	}
	return ParseStat(buf[:n])
}

// readSmall reads a small file into buf with three system calls and no
// allocation; the sign path calls it for every ancestor it checks.
func readSmall(path string, buf []byte) (int, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return 0, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	total := 0
	for total < len(buf) {
		n, err := syscall.Read(fd, buf[total:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 0, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			break
		}
		total += n
	}
	return total, nil
}

// UID reads the real uid from /proc/PID/status, the first of the four
// on its Uid line. That line comes ninth, after lines of bounded length
// (the name, escaped, at most 64 bytes; numbers), well within the first
// 512 bytes, which are all that is read: the card path reads the uid of
// every ancestor.
func (t *Table) UID(pid int) (uint32, error) {
	var buf [512]byte
	n, err := readSmall(t.path(pid, "status"), buf[:])
	if err != nil {
		return 0, gone(pid, err)
	}
	if uid, ok := parseUID(buf[:n]); ok {
		return uid, nil
	}
	return 0, fmt.Errorf("pid %d: no Uid line in status", pid)
}

// parseUID finds the first uid of the Uid line in the text of a status
// file; a line cut off by the end of the text does not count.
func parseUID(b []byte) (uint32, bool) {
	for len(b) > 0 {
		line, rest, whole := bytes.Cut(b, []byte("\n"))
		if !whole {
			break
		}
		if fields, ok := bytes.CutPrefix(line, []byte("Uid:")); ok {
			f := bytes.Fields(fields)
			if len(f) == 0 {
				break
			}
			n, err := strconv.ParseUint(string(f[0]), 10, 32)
			if err != nil {
				break
			}
			return uint32(n), true
		}
		b = rest
	}
	return 0, false
}

type exeKey struct {
	dev, ino     uint64
	size         int64
	mtime, ctime syscall.Timespec
}

// exeFile names the file to open to read pid's executable.
func (t *Table) exeFile(pid int) string { return t.path(pid, "exe") }

// noDir stands for no held descriptor of /proc/PID: the file is found
// by its path.
const noDir = -1

// exeLink returns the path of pid's executable, for display, reading the
// link through dir unless it is noDir.
func (t *Table) exeLink(pid, dir int) string {
	if dir == noDir {
		p, _ := os.Readlink(t.path(pid, "exe"))
		return p
	}
	for size := 256; size <= 1<<16; size *= 4 {
		buf := make([]byte, size)
		n, err := readlinkat(dir, "exe", buf)
		if err != nil {
			return ""
		}
		if n < len(buf) {
			return string(buf[:n])
		}
	}
	return ""
}

func readlinkat(dir int, name string, buf []byte) (int, error) {
	for {
		n, err := unix.Readlinkat(dir, name, buf)
		if err != unix.EINTR {
			return n, err
		}
	}
}

// ExeID stats /proc/PID/exe, which follows the link to the file the
// process maps even when its path was replaced. The link of a process
// that is not dumpable belongs to root: it is reported Hidden.
func (t *Table) ExeID(pid int) (Exe, exeKey, error) { return t.exeID(pid, noDir) }

// exeID is ExeID, through dir unless it is noDir.
func (t *Table) exeID(pid, dir int) (Exe, exeKey, error) {
	var st unix.Stat_t
	var err error
	if dir == noDir {
		err = unix.Stat(t.path(pid, "exe"), &st)
	} else {
		err = unix.Fstatat(dir, "exe", &st, 0)
	}
	if err != nil {
		if err == unix.EACCES || err == unix.EPERM {
			return Exe{Hidden: true}, exeKey{}, nil
		}
		return Exe{}, exeKey{}, gone(pid, &fs.PathError{Op: "stat", Path: t.path(pid, "exe"), Err: err})
	}
	k := keyOfStat(&st)
	return Exe{Dev: k.dev, Ino: k.ino, Size: k.size}, k, nil
}

// keyOfStat is the hash cache's key for the file st describes.
func keyOfStat(st *unix.Stat_t) exeKey {
	return exeKey{dev: st.Dev, ino: st.Ino, size: st.Size,
		mtime: syscall.Timespec{Sec: st.Mtim.Sec, Nsec: st.Mtim.Nsec},
		ctime: syscall.Timespec{Sec: st.Ctim.Sec, Nsec: st.Ctim.Nsec}}
}

// Argv reads /proc/PID/cmdline: what the process says it is running (a
// claim; see [ParseCmdline]). It is nil when the process is gone or its
// command line is empty. A card reads the command line of every ancestor:
// one that fits in 4 KiB is read as stat is, with no allocation for the
// read.
func (t *Table) Argv(pid int) []string {
	var buf [4096]byte
	n, err := readSmall(t.path(pid, "cmdline"), buf[:])
	if err != nil {
		return nil
	}
	if n < len(buf) {
		return ParseCmdline(buf[:n])
	}
	b, err := os.ReadFile(t.path(pid, "cmdline"))
	if err != nil {
		return nil
	}
	return ParseCmdline(b)
}

// BootTime returns the time the machine booted (btime in /proc/stat), for
// turning start ticks into wall-clock times.
func (t *Table) BootTime() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.boot.IsZero() {
		return t.boot
	}
	b, err := os.ReadFile(filepath.Join(t.Root, "stat"))
	if err == nil {
		for line := range bytes.SplitSeq(b, []byte("\n")) {
			if rest, ok := bytes.CutPrefix(line, []byte("btime ")); ok {
				if n, err := strconv.ParseInt(string(bytes.TrimSpace(rest)), 10, 64); err == nil {
					t.boot = time.Unix(n, 0)
				}
			}
		}
	}
	return t.boot
}
