package confine

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// The sockets hidden are those of the listed sockets' directories that
// the user owns or that are not open to every user; sockets under
// Spec.Sockets are the run's and stay.
func TestPersonalSockets(t *testing.T) {
	root := t.TempDir()
	listen := func(p string, mode os.FileMode) string {
		p = filepath.Join(root, p)
		os.MkdirAll(filepath.Dir(p), 0o755)
		l, err := net.Listen("unix", p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	own := listen("a/own.sock", 0o755)
	// Bound under a temporary name, then linked into place, as ssh's
	// ControlMaster is: the listing names the old path.
	cm := listen("a/cm.tmp", 0o600)
	if err := os.Rename(cm, filepath.Join(root, "a/cm")); err != nil {
		t.Fatal(err)
	}
	group := listen("b/docker.sock", 0o660)
	open := listen("b/journal.sock", 0o666)
	run := listen("run/agent.sock.run-R1", 0o600)
	// A socket named in read_write is the person's choice.
	chosen := listen("b/chosen.sock", 0o600)
	// A socket in a hidden tree is out of sight already.
	hidden := listen("hidden/agent.sock", 0o600)
	os.WriteFile(filepath.Join(root, "b/file"), nil, 0o600)
	// A FIFO where a listed socket's directory was: not waited on.
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	var listing strings.Builder
	listing.WriteString("Num       RefCount Protocol Flags    Type St Inode Path\n")
	for i, p := range []string{own, cm, group, open, run, chosen, hidden, "@abstract", "", filepath.Join(root, "fifo/x")} {
		fmt.Fprintf(&listing, "0000000000000000: 00000002 00000000 00010000 0001 01 %d %s\n", 1000+i, p)
	}
	s := &Spec{Dir: root, Sockets: []string{filepath.Join(root, "run")}, ReadWrite: []string{chosen}, Hide: []string{filepath.Join(root, "hidden")}}
	// As the owner of every socket: all but the run's and the chosen one.
	got, err := s.personalSockets(strings.NewReader(listing.String()), os.Getuid())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(root, "a/cm"), own, group, open}
	if !slices.Equal(got, want) {
		t.Errorf("as their owner: %q\nwant %q", got, want)
	}
	// As another user: all but the one open to every user.
	got, err = s.personalSockets(strings.NewReader(listing.String()), os.Getuid()+1)
	if err != nil {
		t.Fatal(err)
	}
	want = []string{filepath.Join(root, "a/cm"), own, group}
	if !slices.Equal(got, want) {
		t.Errorf("as another user: %q\nwant %q", got, want)
	}
}

// A program can bind sockets by the thousand, unnamed or in directories
// of its own, or fill a directory with files, to push a socket of the
// person's (docker's, an ssh ControlMaster's) out of what is searched:
// lines without a path do not count against the bound, and past a bound
// the run is refused, not confined with the socket in its reach.
func TestPersonalSocketsPastTheBounds(t *testing.T) {
	defer func(a, b, c int) { maxSockets, maxSocketDirs, maxSocketDirEntries = a, b, c }(maxSockets, maxSocketDirs, maxSocketDirEntries)
	maxSockets, maxSocketDirs, maxSocketDirEntries = 4, 2, 3
	root := t.TempDir()
	person := filepath.Join(root, "person", "docker.sock")
	os.Mkdir(filepath.Dir(person), 0o755)
	l, err := net.Listen("unix", person)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	line := func(b *strings.Builder, p string) {
		fmt.Fprintf(b, "0000000000000000: 00000002 00000000 00010000 0001 01 1000 %s\n", p)
	}
	listing := func(paths ...string) string {
		var b strings.Builder
		b.WriteString("Num       RefCount Protocol Flags    Type St Inode Path\n")
		for _, p := range paths {
			line(&b, p)
		}
		return b.String()
	}
	s := &Spec{Dir: root}
	// Unnamed and abstract sockets, more than the bound, before it.
	many := []string{"", "@a", "", "@b", "", "@c", ""}
	got, err := s.personalSockets(strings.NewReader(listing(append(many, person)...)), os.Getuid())
	if err != nil || !slices.Equal(got, []string{person}) {
		t.Errorf("after %d unnamed sockets: %q, %v; want %s hidden", len(many), got, err, person)
	}
	// More sockets bound to paths than the bound.
	var flood []string
	for i := range maxSockets {
		flood = append(flood, filepath.Join(root, "flood", fmt.Sprint(i)))
	}
	if got, err := s.personalSockets(strings.NewReader(listing(append(flood, person)...)), os.Getuid()); err == nil {
		t.Errorf("past %d sockets bound to paths: %q hidden and no error", maxSockets, got)
	}
	// Sockets in more directories than the bound.
	var dirs []string
	for i := range maxSocketDirs {
		dirs = append(dirs, filepath.Join(root, fmt.Sprint("d", i), "s"))
	}
	if got, err := s.personalSockets(strings.NewReader(listing(append(dirs, person)...)), os.Getuid()); err == nil {
		t.Errorf("past %d directories: %q hidden and no error", maxSocketDirs, got)
	}
	// The person's socket's directory filled with files.
	for i := range maxSocketDirEntries {
		os.WriteFile(filepath.Join(root, "person", fmt.Sprint("f", i)), nil, 0o600)
	}
	if got, err := s.personalSockets(strings.NewReader(listing(person)), os.Getuid()); err == nil {
		t.Errorf("a directory of more than %d entries: %q hidden and no error", maxSocketDirEntries, got)
	}
}

// FuzzPersonalSockets reads a /proc/net/unix listing, whose paths any
// process can choose (a newline in one makes a line of its own). Every
// socket hidden is a socket, in a directory a listed path names.
func FuzzPersonalSockets(f *testing.F) {
	f.Add("Num RefCount Protocol Flags Type St Inode Path\n0: 2 0 10000 1 1 5 /tmp/x y\n")
	f.Add("\n\n a b c d e f g /\n")
	if self, err := os.ReadFile("/proc/net/unix"); err == nil {
		f.Add(string(self))
	}
	dir := f.TempDir()
	l, err := net.Listen("unix", filepath.Join(dir, "agent.sock"))
	if err != nil {
		f.Fatal(err)
	}
	defer l.Close()
	f.Add(fmt.Sprintf("Num RefCount Protocol Flags Type St Inode Path\n0: 2 0 10000 1 1 5 %s/gone\n0: 2 0 10000 1 1 5 %s/x\n0: 2 0 0 1 1 5 @abstract\n", dir, dir+"/../"+filepath.Base(dir)))
	f.Fuzz(func(t *testing.T, listing string) {
		s := &Spec{Sockets: []string{"/run"}}
		hide, _ := s.personalSockets(strings.NewReader(listing), os.Getuid())
		for _, p := range hide {
			unclean := strings.Contains(listing, "/.") || strings.Contains(listing, "//") // named otherwise once cleaned
			if !filepath.IsAbs(p) || !strings.Contains(listing, " "+filepath.Dir(p)) && !unclean {
				t.Fatalf("%q hidden, in a directory the listing does not name", p)
			}
			if fi, err := os.Lstat(p); err != nil || fi.Mode().Type() != os.ModeSocket {
				t.Fatalf("%q hidden, which is not a socket (%v)", p, err)
			}
		}
	})
}

// Where the run's view hides a directory, its sockets need no hiding;
// a tree shown inside it shows its sockets again.
func TestShown(t *testing.T) {
	s := &Spec{Dir: "/tmp/work", ReadOnly: []string{"/home/u/.ssh/config", "/tmp/shown"}, Hide: []string{"/home/u/.ssh", "/run/user/1"}}
	for d, want := range map[string]bool{
		"/tmp":              false,
		"/tmp/tmux-0":       false,
		"/tmp/work":         true,
		"/tmp/work/sub":     true,
		"/tmp/shown/x":      true,
		"/home/u/.ssh":      false,
		"/home/u/.ssh/cm":   false,
		"/home/u/.local":    true,
		"/run/user/1/gnupg": false,
		"/run/docker":       true,
	} {
		if got := s.shown(d); got != want {
			t.Errorf("shown(%s) = %v, want %v", d, got, want)
		}
	}
}

// A socket bound to a path relative to its program's working directory
// is listed by that relative path: it is found in the working directory
// of the process that holds it, and hidden as any other.
func TestPersonalSocketBoundRelative(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "project")
	os.MkdirAll(dir, 0o755)
	t.Chdir(dir)
	l, err := net.Listen("unix", "server.sock")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// Shown to the run (read-only), not private as the rest of /tmp.
	s := &Spec{Dir: filepath.Join(root, "work"), ReadOnly: []string{root}}
	if err := s.HideSockets(); err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "server.sock"); !slices.Contains(s.Hide, want) {
		t.Errorf("hidden: %q\nwant %s among them", s.Hide, want)
	}
}
