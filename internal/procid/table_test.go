package procid

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

func TestParseStat(t *testing.T) {
	line := "4121 (a (weird) name) S 3988 4121 3900 34816 4121 4194304 1 2 3 4 5 6 7 8 20 0 1 0 123456 1000 200 18446744073709551615\n"
	st, err := ParseStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if st.Comm != "a (weird) name" || st.PPID != 3988 || st.Session != 3900 || st.StartTicks != 123456 {
		t.Fatalf("got %+v", st)
	}
	for _, bad := range []string{"", "1 (x", "1 (x) S 2", "1 (x) S notanumber 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 5"} {
		if _, err := ParseStat([]byte(bad)); err == nil {
			t.Errorf("ParseStat(%q) succeeded", bad)
		}
	}
}

func FuzzParseStat(f *testing.F) {
	self, _ := os.ReadFile("/proc/self/stat")
	f.Add(self)
	f.Add([]byte("1 (init) S 0 1 1 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 1 1 1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ParseStat(b)
	})
}

// fakeProc is a process table in a temporary directory: per pid a stat
// file, a status file and an exe symlink.
type fakeProc struct {
	t    *testing.T
	root string
}

func newFakeProc(t *testing.T) *fakeProc {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "stat"), []byte("cpu 1 2 3\nbtime 1700000000\n"), 0o644)
	return &fakeProc{t: t, root: root}
}

// exe creates an executable file standing for a program.
func (f *fakeProc) exe(name, content string) string {
	p := filepath.Join(f.root, "bin", name)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
		f.t.Fatal(err)
	}
	return p
}

func (f *fakeProc) set(pid, ppid int, start uint64, exe string) {
	d := filepath.Join(f.root, strconv.Itoa(pid))
	os.RemoveAll(d)
	if err := os.MkdirAll(d, 0o755); err != nil {
		f.t.Fatal(err)
	}
	stat := fmt.Sprintf("%d (%s) S %d %d %d 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 %d 0 0\n", pid, filepath.Base(exe), ppid, pid, pid, start)
	os.WriteFile(filepath.Join(d, "stat"), []byte(stat), 0o644)
	os.WriteFile(filepath.Join(d, "status"), []byte("Name:\tx\nUid:\t1000\t1000\t1000\t1000\n"), 0o644)
	if err := os.Symlink(exe, filepath.Join(d, "exe")); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fakeProc) kill(pid int) { os.RemoveAll(filepath.Join(f.root, strconv.Itoa(pid))) }

func TestFakeTablePidReuse(t *testing.T) {
	f := newFakeProc(t)
	agent := f.exe("claude", "agent program")
	ssh := f.exe("ssh", "ssh program")
	f.set(100, 1, 500, agent)
	f.set(200, 100, 600, ssh)
	tab := &Table{Root: f.root}

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
	f.kill(200)
	if err := p.Verify(); !errors.Is(err, ErrGone) {
		t.Fatalf("Verify after exit = %v, want ErrGone", err)
	}
	f.set(200, 100, 900, ssh)
	if err := p.Verify(); !errors.Is(err, ErrGone) {
		t.Fatalf("Verify after pid reuse = %v, want ErrGone", err)
	}
}

func TestFakeTableExec(t *testing.T) {
	f := newFakeProc(t)
	ssh := f.exe("ssh", "ssh program")
	sh := f.exe("sh", "a shell")
	f.set(300, 1, 700, ssh)
	tab := &Table{Root: f.root}
	p, err := tab.Pin(300)
	if err != nil {
		t.Fatal(err)
	}
	// exec keeps pid and start time and replaces the executable.
	f.set(300, 1, 700, sh)
	if err := p.Verify(); !errors.Is(err, ErrChanged) {
		t.Fatalf("Verify after exec = %v, want ErrChanged", err)
	}
}

func TestDescendsFrom(t *testing.T) {
	f := newFakeProc(t)
	e := f.exe("prog", "p")
	f.set(10, 1, 100, e)  // run
	f.set(20, 10, 150, e) // bash
	f.set(30, 20, 200, e) // git
	f.set(40, 30, 250, e) // ssh
	f.set(50, 1, 260, e)  // unrelated
	tab := &Table{Root: f.root}
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
	f.set(10, 1, 255, e)
	if ok, _ := tab.DescendsFrom(40, 250, &run); ok {
		t.Fatal("a reused parent pid (younger than its child) must end the walk")
	}
	// A stale start time for the requester itself is refused.
	if ok, err := tab.DescendsFrom(40, 999, &run); ok || !errors.Is(err, ErrGone) {
		t.Fatalf("stale requester: %v %v", ok, err)
	}
	chain := tab.Ancestors(&Process{PID: 40, PPID: 30, StartTicks: 250})
	if len(chain) != 2 { // git, bash; the run's pid now belongs to a younger process
		t.Fatalf("ancestors = %v", chain)
	}
}
