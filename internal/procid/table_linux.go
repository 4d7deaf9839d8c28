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

// exePath returns the path of pid's executable, for display.
func (t *Table) exePath(pid int) string {
	p, _ := os.Readlink(t.path(pid, "exe"))
	return p
}

// ExeID stats /proc/PID/exe, which follows the link to the file the
// process maps even when its path was replaced. The link of a process
// that is not dumpable belongs to root: it is reported Hidden.
func (t *Table) ExeID(pid int) (Exe, exeKey, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(t.path(pid, "exe"), &st); err != nil {
		if err == syscall.EACCES || err == syscall.EPERM {
			return Exe{Hidden: true}, exeKey{}, nil
		}
		return Exe{}, exeKey{}, gone(pid, &fs.PathError{Op: "stat", Path: t.path(pid, "exe"), Err: err})
	}
	k := exeKey{dev: uint64(st.Dev), ino: st.Ino, size: st.Size, mtime: st.Mtim, ctime: st.Ctim}
	return Exe{Dev: k.dev, Ino: k.ino, Size: k.size}, k, nil
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
