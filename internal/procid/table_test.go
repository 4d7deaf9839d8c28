package procid_test

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/postern/postern/internal/procid"
	"github.com/postern/postern/internal/procid/proctest"
)

func TestParseStat(t *testing.T) {
	line := "4121 (a (weird) name) S 3988 4121 3900 34816 4121 4194304 1 2 3 4 5 6 7 8 20 0 1 0 123456 1000 200 18446744073709551615\n"
	st, err := procid.ParseStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if st.Comm != "a (weird) name" || st.State != 'S' || st.PPID != 3988 || st.Session != 3900 || st.StartTicks != 123456 || st.Layout != (procid.Layout{}) {
		t.Fatalf("got %+v", st)
	}
	// A whole line, as Linux 3.5 and later write it: the layout too.
	line = "4121 (bash) S 3988 4121 3900 34816 4121 4194304 1 2 3 4 5 6 7 8 20 0 1 0 123456 1000 200 18446744073709551615 " +
		"94000000000000 94000000100000 140720000000000 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 " +
		"94000000200000 94000000210000 94000100000000 140720000001000 140720000001100 140720000001100 140720000002000 0\n"
	st, err = procid.ParseStat([]byte(line))
	want := procid.Layout{StartCode: 94000000000000, EndCode: 94000000100000, StartStack: 140720000000000,
		StartData: 94000000200000, EndData: 94000000210000, StartBrk: 94000100000000,
		ArgStart: 140720000001000, ArgEnd: 140720000001100, EnvStart: 140720000001100, EnvEnd: 140720000002000}
	if err != nil || st.StartTicks != 123456 || st.Layout != want {
		t.Fatalf("layout: %+v %v", st.Layout, err)
	}
	self, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	if st, err := procid.ParseStat(self); err != nil || st.Layout.StartStack == 0 || st.Layout.EnvEnd <= st.Layout.EnvStart {
		t.Fatalf("this process's layout: %+v %v", st.Layout, err)
	}
	for _, bad := range []string{"", "1 (x", "1 (x) S 2", "1 (x) S notanumber 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 5"} {
		if _, err := procid.ParseStat([]byte(bad)); err == nil {
			t.Errorf("procid.ParseStat(%q) succeeded", bad)
		}
	}
}

// parseStatRef parses a stat line the plain way: the name between the
// first '(' and the last ')', then the fields up to the line's end, one
// space or more apart, read with strconv.
func parseStatRef(b []byte) (procid.Stat, bool) {
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return procid.Stat{}, false
	}
	rest, _, _ := strings.Cut(string(b[end+1:]), "\n")
	var fields []string
	for f := range strings.SplitSeq(rest, " ") {
		if f != "" {
			fields = append(fields, f)
		}
	}
	if len(fields) <= 19 {
		return procid.Stat{}, false
	}
	ppid, err1 := strconv.ParseInt(fields[1], 10, 64)
	session, err3 := strconv.ParseInt(fields[3], 10, 64)
	start, err19 := strconv.ParseUint(fields[19], 10, 64)
	if err1 != nil || err3 != nil || err19 != nil {
		return procid.Stat{}, false
	}
	st := procid.Stat{Comm: string(b[open+1 : end]), State: fields[0][0], PPID: int(ppid), Session: int(session), StartTicks: start}
	l := &st.Layout
	for i, dst := range map[int]*uint64{23: &l.StartCode, 24: &l.EndCode, 25: &l.StartStack, 42: &l.StartData, 43: &l.EndData,
		44: &l.StartBrk, 45: &l.ArgStart, 46: &l.ArgEnd, 47: &l.EnvStart, 48: &l.EnvEnd} {
		if i >= len(fields) {
			continue
		}
		if n, err := strconv.ParseUint(fields[i], 10, 64); err == nil {
			*dst = n
		}
	}
	return st, true
}

// FuzzParseStat holds ParseStat, which parses without allocating, to
// the plain parse of a stat line.
func FuzzParseStat(f *testing.F) {
	self, _ := os.ReadFile("/proc/self/stat")
	f.Add(self)
	f.Add([]byte("1 (init) S 0 1 1 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 1 1 1"))
	f.Add([]byte("4121 (a (weird) name) S 3988 4121 3900 34816 4121 4194304 1 2 3 4 5 6 7 8 20 0 1 0 123456 1000 200 18446744073709551615\n"))
	f.Add([]byte("4121 (bash) S 3988 4121 3900 34816 4121 4194304 1 2 3 4 5 6 7 8 20 0 1 0 123456 1000 200 18446744073709551615 " +
		"94000000000000 94000000100000 140720000000000 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 " +
		"94000000200000 94000000210000 94000100000000 140720000001000 140720000001100 140720000001100 140720000002000 0\n"))
	f.Add([]byte("7 (x) Z 9223372036854775808 1 +3 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 18446744073709551616 99999999999999999999 -1 x\n"))
	f.Add([]byte("7 (x)  S  1  1  1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 5\n6 7 8"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := procid.ParseStat(b)
		want, ok := parseStatRef(b)
		if (err == nil) != ok || got != want {
			t.Fatalf("ParseStat(%q) = %+v, %v\nthe plain parse gives %+v, %v", b, got, err, want, ok)
		}
	})
}

func TestFakeTablePidReuse(t *testing.T) {
	f := proctest.New(t)
	agent := f.Exe("claude", "agent program")
	ssh := f.Exe("ssh", "ssh program")
	f.Set(100, 1, 500, agent)
	f.Set(200, 100, 600, ssh)
	tab := f.Table

	p, err := tab.Pin(200)
	if err != nil {
		t.Fatal(err)
	}
	if p.Exe.Hash() == "" || p.UID != 1000 || p.PPID != 100 {
		t.Fatalf("inspected %+v", p.Process)
	}
	if err := p.Verify(); err != nil {
		t.Fatalf("Verify on unchanged process: %v", err)
	}
	// The process exits and its pid is reused by another process running
	// the same program: a pid alone is not identity.
	f.Kill(200)
	if err := p.Verify(); !errors.Is(err, procid.ErrGone) {
		t.Fatalf("Verify after exit = %v, want procid.ErrGone", err)
	}
	f.Set(200, 100, 900, ssh)
	if err := p.Verify(); !errors.Is(err, procid.ErrGone) {
		t.Fatalf("Verify after pid reuse = %v, want procid.ErrGone", err)
	}
}

func TestFakeTableExec(t *testing.T) {
	f := proctest.New(t)
	ssh := f.Exe("ssh", "ssh program")
	sh := f.Exe("sh", "a shell")
	f.Set(300, 1, 700, ssh)
	tab := f.Table
	p, err := tab.Pin(300)
	if err != nil {
		t.Fatal(err)
	}
	// exec keeps pid and start time and replaces the executable.
	f.Exec(300, sh)
	if err := p.Verify(); !errors.Is(err, procid.ErrChanged) {
		t.Fatalf("Verify after exec = %v, want procid.ErrChanged", err)
	}
	// An exec of the same executable (a script under the same
	// interpreter) gives a new address space layout.
	f.Set(301, 1, 710, sh, "sh", "first.sh")
	p, err = tab.Pin(301)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Verify(); err != nil {
		t.Fatal(err)
	}
	f.Exec(301, sh, "x", "other.sh")
	if err := p.Verify(); !errors.Is(err, procid.ErrChanged) || !strings.Contains(err.Error(), "layout") {
		t.Fatalf("Verify after an exec of the same executable = %v, want procid.ErrChanged", err)
	}
}

func TestDescendsFrom(t *testing.T) {
	f := proctest.New(t)
	e := f.Exe("prog", "p")
	f.Set(10, 1, 100, e)  // run
	f.Set(20, 10, 150, e) // bash
	f.Set(30, 20, 200, e) // git
	f.Set(40, 30, 250, e) // ssh
	f.Set(50, 1, 260, e)  // unrelated
	tab := f.Table
	run, err := tab.Inspect(10)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := tab.DescendsFrom(40, 250, &run); !ok || err != nil {
		t.Fatalf("ssh should descend from the run: %v %v", ok, err)
	}
	if ok, _ := tab.DescendsFrom(10, 100, &run); !ok {
		t.Fatal("the run itself is covered")
	}
	if ok, _ := tab.DescendsFrom(50, 260, &run); ok {
		t.Fatal("an unrelated process is not a descendant")
	}
	// The run exits and a new process takes its pid: its old children are
	// no longer descendants of the granted run.
	f.Set(10, 1, 255, e)
	if ok, _ := tab.DescendsFrom(40, 250, &run); ok {
		t.Fatal("a reused parent pid (younger than its child) must end the walk")
	}
	// A stale start time for the requester itself is refused.
	if ok, err := tab.DescendsFrom(40, 999, &run); ok || !errors.Is(err, procid.ErrGone) {
		t.Fatalf("stale requester: %v %v", ok, err)
	}
	chain := tab.Ancestors(&procid.Process{PID: 40, PPID: 30, StartTicks: 250})
	if len(chain) != 2 { // git, bash; the run's pid now belongs to a younger process
		t.Fatalf("ancestors = %v", chain)
	}
}

// A replaced executable is another file: the hash cache, keyed by device,
// inode, size, mtime and ctime, is not fooled by a replacement with the
// same size and modification time.
func TestReplacedExecutableIsANewIdentity(t *testing.T) {
	f := proctest.New(t)
	exe := f.Exe("agent", "version 1")
	f.Set(50, 1, 500, exe)
	before, err := f.Table.Inspect(50)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(exe)
	// Replace the file at the same path, same size, same mtime.
	tmp := exe + ".new"
	os.WriteFile(tmp, []byte("version 2"), 0o755)
	os.Chtimes(tmp, st.ModTime(), st.ModTime())
	if err := os.Rename(tmp, exe); err != nil {
		t.Fatal(err)
	}
	f.Set(51, 1, 600, exe)
	after, err := f.Table.Inspect(51)
	if err != nil {
		t.Fatal(err)
	}
	if after.Exe.Same(before.Exe) || after.Exe.Hash() == before.Exe.Hash() || after.Exe.Path != before.Exe.Path {
		t.Fatalf("replaced executable not told apart:\nbefore %+v\nafter  %+v", before.Exe, after.Exe)
	}
}

// A process's executable path is believed only while it names, for the
// reader, the very file the process executes.
func TestSamePath(t *testing.T) {
	f := proctest.New(t)
	exe := f.Exe("git", "git version 1")
	f.Set(70, 1, 700, exe)
	p, err := f.Table.Inspect(70)
	if err != nil {
		t.Fatal(err)
	}
	if !procid.SamePath(exe, p.Exe) {
		t.Fatal("the executable's own path was not believed")
	}
	if procid.SamePath("git", p.Exe) || procid.SamePath("", p.Exe) {
		t.Fatal("a relative path was believed")
	}
	os.Rename(exe, exe+".old")
	os.WriteFile(exe, []byte("another program"), 0o755)
	if procid.SamePath(exe, p.Exe) {
		t.Fatal("a path that now names another file was believed")
	}
	if !procid.SamePath(exe+".old", p.Exe) {
		t.Fatal("the file's new path was not believed")
	}
}

// Lineage with a known parent: a process the caller vouches for stands
// for its pid without a read, unless it is younger than the child (the
// child's parent was another process, whose pid was taken since); a
// vouched parent that does not end the walk is read and the walk goes on.
func TestLineageKnownParent(t *testing.T) {
	f := proctest.New(t)
	e := f.Exe("prog", "p")
	f.Set(1, 0, 1, e)
	f.Set(10, 1, 100, e) // run
	f.Set(20, 10, 150, e)
	f.Set(30, 20, 200, e) // requester
	req := f.Peer(30)
	type visit struct {
		pid   int
		start uint64
	}
	walk := func(known func(int) (uint64, bool), stopAt int) []visit {
		var seen []visit
		if err := req.Lineage(known, func(pid int, start uint64) bool {
			seen = append(seen, visit{pid, start})
			return pid != stopAt
		}); err != nil {
			t.Fatal(err)
		}
		return seen
	}
	asked := 0
	known := func(start uint64) func(int) (uint64, bool) {
		return func(pid int) (uint64, bool) {
			if pid == 20 {
				asked++
				return start, true
			}
			return 0, false
		}
	}
	// Vouched for and ending the walk: pid 20 at the start given.
	if got := walk(known(150), 20); len(got) != 2 || got[1] != (visit{20, 150}) || asked != 1 {
		t.Fatalf("vouched parent: %v (asked %d)", got, asked)
	}
	// Vouched for, and the walk goes on: 20 is read, visited again, and
	// the walk reaches the top.
	if got := walk(known(150), -1); len(got) != 5 || got[2] != (visit{20, 150}) || got[4].pid != 1 {
		t.Fatalf("a vouched parent that does not end the walk: %v", got)
	}
	// A vouched process younger than the child is not its parent: 20 is
	// read instead, and visited with its own start time.
	if got := walk(known(250), 20); len(got) != 2 || got[1] != (visit{20, 150}) {
		t.Fatalf("a younger process stood for the parent: %v", got)
	}
}
