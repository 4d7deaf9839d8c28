// Package proctest builds fake process tables for tests: a directory laid
// out like /proc, with per pid a stat file, a status file and an exe
// symlink, that a procid.Table can read. Tests use it to replay what the
// real kernel does only at random — a pid reused by another process, an
// exec on the same pid — deterministically.
package proctest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/postern/postern/internal/procid"
)

// Fake is a fake process table.
type Fake struct {
	t     testing.TB
	Root  string
	Table *procid.Table
	execs uint64 // programs executed so far, for distinct layouts
}

// New creates an empty table.
func New(t testing.TB) *Fake {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "stat"), []byte("cpu 1 2 3\nbtime 1700000000\n"), 0o644)
	// The reader's own user namespace, which every process shares unless
	// SetUserNS moves it.
	os.MkdirAll(filepath.Join(root, "self", "ns"), 0o755)
	os.WriteFile(filepath.Join(root, "self", "ns", "user"), []byte("user:[4026531837]"), 0o644)
	return &Fake{t: t, Root: root, Table: &procid.Table{Root: root}}
}

// Exe creates an executable file with the given content (its hash) and
// returns its path.
func (f *Fake) Exe(name, content string) string {
	p := filepath.Join(f.Root, "bin", name)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
		f.t.Fatal(err)
	}
	return p
}

// Set creates or replaces process pid: its parent, start time (ticks),
// executable, uid 1000, and command line. It leads its own session.
func (f *Fake) Set(pid, ppid int, start uint64, exe string, argv ...string) {
	f.SetSession(pid, ppid, start, pid, exe, argv...)
}

// SetSession is Set with the process in the given session.
func (f *Fake) SetSession(pid, ppid int, start uint64, session int, exe string, argv ...string) {
	d := filepath.Join(f.Root, strconv.Itoa(pid))
	os.RemoveAll(d)
	if err := os.MkdirAll(d, 0o755); err != nil {
		f.t.Fatal(err)
	}
	// Every program executed gets an address space layout of its own, as
	// under address space randomization.
	f.execs++
	base := f.execs << 32
	stat := fmt.Sprintf("%d (%s) S %d %d %d 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 %d 0 0 0 %d %d %d 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 %d %d %d %d %d %d %d 0\n",
		pid, filepath.Base(exe), ppid, pid, session, start,
		base+0x1000, base+0x2000, base+0x7f000, base+0x3000, base+0x4000, base+0x5000, base+0x7e000, base+0x7e100, base+0x7e100, base+0x7e800)
	os.WriteFile(filepath.Join(d, "stat"), []byte(stat), 0o644)
	os.WriteFile(filepath.Join(d, "status"), []byte("Name:\tx\nUid:\t1000\t1000\t1000\t1000\n"), 0o644)
	cmdline := ""
	for _, a := range argv {
		cmdline += a + "\x00"
	}
	os.WriteFile(filepath.Join(d, "cmdline"), []byte(cmdline), 0o644)
	if err := os.Symlink(exe, filepath.Join(d, "exe")); err != nil {
		f.t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(d, "ns"), 0o755)
	os.Symlink(filepath.Join(f.Root, "self", "ns", "user"), filepath.Join(d, "ns", "user"))
}

// SetUserNS puts process pid in a user namespace of its own, as unshare
// -U does.
func (f *Fake) SetUserNS(pid int) {
	p := filepath.Join(f.Root, strconv.Itoa(pid), "ns", "user")
	os.Remove(p)
	os.WriteFile(p, []byte("user:[4026532000]"), 0o644)
}

// Exec replaces the program of process pid, as execve does: the same
// pid, parent, start time and session, another executable (or the same
// one) with a new address space layout and command line.
func (f *Fake) Exec(pid int, exe string, argv ...string) {
	st, err := f.Table.Stat(pid)
	if err != nil {
		f.t.Fatal(err)
	}
	f.SetSession(pid, st.PPID, st.StartTicks, st.Session, exe, argv...)
}

// Executing shows process pid in the middle of an exec, as its parent
// may first see it: the stack placed, the code, data, arguments and
// environment not yet (their /proc/PID/stat fields 0). The returned
// function ends the exec with the layout pid had before.
func (f *Fake) Executing(pid int) (finish func()) {
	// startcode, endcode (26, 27); start_data through env_end (45-51).
	return f.zeroStat(pid, 26, 27, 45, 46, 47, 48, 49, 50, 51)
}

// zeroStat sets the given fields (numbered from 1) of pid's stat to 0,
// and returns what puts the stat back as it was.
func (f *Fake) zeroStat(pid int, fields ...int) (restore func()) {
	p := filepath.Join(f.Root, strconv.Itoa(pid), "stat")
	full, err := os.ReadFile(p)
	if err != nil {
		f.t.Fatal(err)
	}
	fs := strings.Fields(string(full))
	for _, n := range fields {
		fs[n-1] = "0"
	}
	f.replace(p, []byte(strings.Join(fs, " ")+"\n"))
	return func() { f.replace(p, full) }
}

// replace writes the file at p whole, as a reader running meanwhile must
// see it: before or after, never in between.
func (f *Fake) replace(p string, b []byte) {
	if err := os.WriteFile(p+".new", b, 0o644); err != nil {
		f.t.Error(err)
	}
	if err := os.Rename(p+".new", p); err != nil {
		f.t.Error(err)
	}
}

// Zombie shows process pid as having exited but not been reaped: its
// address space gone (the layout fields 0), its executable no longer
// shown.
func (f *Fake) Zombie(pid int) {
	os.Remove(filepath.Join(f.Root, strconv.Itoa(pid), "exe"))
	f.zeroStat(pid, 26, 27, 28, 45, 46, 47, 48, 49, 50, 51)
}

// Kill removes process pid.
func (f *Fake) Kill(pid int) { os.RemoveAll(filepath.Join(f.Root, strconv.Itoa(pid))) }

// Peer pins pid as a connected peer would be.
func (f *Fake) Peer(pid int) *procid.Peer {
	p, err := f.Table.Pin(pid)
	if err != nil {
		f.t.Fatal(err)
	}
	return p
}
