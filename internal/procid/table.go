package procid

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"sync"
	"syscall"
	"time"
)

// A Table reads process facts from a proc file system rooted at Root.
// Unit tests point Root at a fake tree holding, per pid, a "stat" file, a
// "status" file with a Uid line and an "exe" symlink.
type Table struct {
	Root string

	mu     sync.Mutex
	hashes map[exeKey][32]byte
	boot   time.Time
	pins   map[shareKey]*sharedPin // pins shared by a process's connections
}

// Host is the table of the machine's own /proc.
var Host = &Table{Root: "/proc"}

// Stat holds the fields of /proc/PID/stat that identity needs.
type Stat struct {
	Comm string
	// State is the process's state (Linux: R, S, D, T stopped, t
	// stopped by a tracer, Z, X, ...); 0 where it is not shown.
	State      byte
	PPID       int
	Session    int
	StartTicks uint64
	Layout     Layout
}

// Layout is where the kernel placed a process's address space when it
// executed its program: the code, the stack, the data, the heap's start,
// the arguments and the environment (/proc/PID/stat fields 26-28 and
// 45-51). A new program gets a new layout (under address space
// randomization, always); the process can change it only with
// prctl(PR_SET_MM). It is zero where the kernel does not show it (a
// process the reader may not trace, a kernel thread).
type Layout struct {
	StartCode, EndCode, StartStack uint64
	StartData, EndData, StartBrk   uint64
	ArgStart, ArgEnd               uint64
	EnvStart, EnvEnd               uint64
}

// layoutField maps /proc/PID/stat fields (counted from the state, field
// 3) to the Layout they fill.
func (l *Layout) field(i int) *uint64 {
	switch i {
	case 23:
		return &l.StartCode
	case 24:
		return &l.EndCode
	case 25:
		return &l.StartStack
	case 42:
		return &l.StartData
	case 43:
		return &l.EndData
	case 44:
		return &l.StartBrk
	case 45:
		return &l.ArgStart
	case 46:
		return &l.ArgEnd
	case 47:
		return &l.EnvStart
	case 48:
		return &l.EnvEnd
	}
	return nil
}

// ParseStat parses the contents of /proc/PID/stat. The command name may
// contain spaces and parentheses, so fields are counted from the last ')'.
// Nothing it returns refers to b, so a caller's buffer stays on its
// stack.
func ParseStat(b []byte) (Stat, error) {
	open := bytes.IndexByte(b, '(')
	end := bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return Stat{}, errors.New("malformed stat: no command name")
	}
	var st Stat
	st.Comm = string(b[open+1 : end])
	rest := b[end+1:]
	// Fields after the name: state(3) ppid(4) pgrp(5) session(6) ...
	// starttime(22) ... startcode(26) ... env_end(51).
	var field int
	for i := 0; i < len(rest) && field <= 48; {
		for i < len(rest) && rest[i] == ' ' {
			i++
		}
		j := i
		for j < len(rest) && rest[j] != ' ' && rest[j] != '\n' {
			j++
		}
		if j == i {
			break
		}
		tok := rest[i:j]
		switch field {
		case 0:
			st.State = tok[0]
		case 1:
			n, ok := signedDecimal(tok)
			if !ok {
				return Stat{}, fmt.Errorf("malformed stat: ppid %q", string(tok))
			}
			st.PPID = n
		case 3:
			n, ok := signedDecimal(tok)
			if !ok {
				return Stat{}, fmt.Errorf("malformed stat: session %q", string(tok))
			}
			st.Session = n
		case 19:
			n, ok := decimal(tok)
			if !ok {
				return Stat{}, fmt.Errorf("malformed stat: starttime %q", string(tok))
			}
			st.StartTicks = n
		default:
			if f := st.Layout.field(field); f != nil {
				// Unparsable: left zero, so no comparison depends on it.
				*f, _ = decimal(tok)
			}
		}
		field++
		i = j
	}
	if field <= 19 {
		return Stat{}, errors.New("malformed stat: too few fields")
	}
	return st, nil
}

// decimal parses an unsigned decimal number that fits in 64 bits, as
// strconv.ParseUint does, without making garbage: stat is parsed at
// every request.
func decimal(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (math.MaxUint64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// signedDecimal parses a decimal int, optionally negative, as
// strconv.Atoi does.
func signedDecimal(b []byte) (int, bool) {
	neg := len(b) > 0 && (b[0] == '-' || b[0] == '+')
	digits := b
	if neg {
		neg, digits = b[0] == '-', b[1:]
	}
	n, ok := decimal(digits)
	switch {
	case !ok || n > -math.MinInt || (!neg && n > math.MaxInt):
		return 0, false
	case neg:
		return int(-n), true // -(-math.MinInt) wraps to math.MinInt
	}
	return int(n), true
}

// Exe returns the executable of pid with its path and SHA-256. Hashes are
// cached by (device, inode, size, mtime, ctime): a running executable
// cannot be written in place (ETXTBSY), and ctime cannot be set back.
func (t *Table) Exe(pid int) (Exe, error) {
	e, _, err := t.exeOf(pid, noDir)
	return e, err
}

// exeOf is Exe, reading the executable's link through dir, a descriptor
// of /proc/PID held by a pin, when it is not noDir; it also returns the
// key the executable was found with (zero when hidden).
func (t *Table) exeOf(pid, dir int) (Exe, exeKey, error) {
	e, k, err := t.exeID(pid, dir)
	if err != nil || e.Hidden {
		return e, exeKey{}, err
	}
	e.Path = t.exeLink(pid, dir)
	if sum, ok := t.cachedHash(k); ok {
		// The hash was taken of the file with exactly these attributes,
		// and checked against them after it was read: no second stat.
		e.SHA256 = sum
		return e, k, nil
	}
	sum, err := HashFile(t.exeFile(pid))
	if err != nil {
		// An unreadable executable (a non-dumpable process) keeps a
		// zero hash; policy treats it as unidentified.
		return e, k, nil
	}
	// The hash is only meaningful if the file did not change while read.
	if _, k2, err := t.exeID(pid, dir); err != nil || k2 != k {
		return Exe{}, exeKey{}, fmt.Errorf("pid %d: %w", pid, ErrChanged)
	}
	t.mu.Lock()
	if t.hashes == nil {
		t.hashes = make(map[exeKey][32]byte)
	}
	t.hashes[k] = sum
	t.mu.Unlock()
	e.SHA256 = sum
	return e, k, nil
}

func (t *Table) cachedHash(k exeKey) ([32]byte, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	sum, ok := t.hashes[k]
	return sum, ok
}

// HashFile returns the SHA-256 of the file at path.
func HashFile(path string) ([32]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return [32]byte{}, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return [32]byte{}, err
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum, nil
}

// Inspect reads the identity facts of pid. It does not prove that pid
// still names the same process afterwards: callers pin the process with a
// pidfd (see [PeerOf]) or compare start times again.
func (t *Table) Inspect(pid int) (Process, error) {
	p, _, err := t.inspect(pid, nil, nil)
	return p, err
}

// inspect reads the facts of pid. With uid set (the kernel's socket
// credentials) the uid is not read again from /proc. With pn set (a pin
// taken before, whose evidence is held), stat and the executable are read
// through the pin, and stat is not read a second time: the caller checks
// the pin afterwards, which proves that the process did not change while
// its facts were read, as a second read of its start time would.
//
// It also returns the key the executable was found with.
func (t *Table) inspect(pid int, uid *uint32, pn pin) (Process, exeKey, error) {
	var st Stat
	var err error
	if pn != nil {
		st, err = pn.stat(t, &Process{PID: pid})
	} else {
		st, err = t.Stat(pid)
	}
	if err != nil {
		return Process{}, exeKey{}, err
	}
	var exe Exe
	var key exeKey
	if pn != nil {
		exe, key, err = pn.exe(t, pid)
	} else {
		exe, key, err = t.exeOf(pid, noDir)
	}
	if err != nil {
		return Process{}, exeKey{}, err
	}
	p := Process{PID: pid, PPID: st.PPID, StartTicks: st.StartTicks, Session: st.Session, Comm: st.Comm, Exe: exe, Layout: st.Layout}
	if uid != nil {
		p.UID = *uid
	} else if p.UID, err = t.UID(pid); err != nil {
		return Process{}, exeKey{}, err
	}
	// The facts belong together only if the process did not change while
	// they were read.
	if pn == nil {
		if again, err := t.Stat(pid); err != nil || again.StartTicks != st.StartTicks {
			return Process{}, exeKey{}, fmt.Errorf("pid %d: %w", pid, ErrGone)
		}
	}
	return p, key, nil
}

// gone is the error of a read of pid's /proc that failed with err: the
// process is gone when its files are, and unchecked (ErrNoResources) when
// this process is short of descriptors or memory.
func gone(pid int, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH):
		return fmt.Errorf("pid %d: %w", pid, ErrGone)
	case Short(err):
		return fmt.Errorf("pid %d: %w (%w)", pid, ErrNoResources, err)
	}
	return fmt.Errorf("pid %d: %w", pid, err)
}
