package safesocket

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// activatedFD returns a descriptor of its own for a socket a service
// manager would pass: a listening UNIX stream socket at path, made with
// the given socket and directory modes.
func activatedFD(t *testing.T, dirMode, sockMode os.FileMode) (fd int, path string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "postern")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(dir, "agent.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	os.Chmod(path, sockMode)
	os.Chmod(dir, dirMode)
	return dupListener(t, l), path
}

// dupListener returns a duplicate of l's descriptor and closes l.
func dupListener(t *testing.T, l interface {
	SyscallConn() (syscall.RawConn, error)
	Close() error
}) int {
	t.Helper()
	rc, err := l.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	fd := -1
	rc.Control(func(s uintptr) { fd, err = unix.Dup(int(s)) })
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	return fd
}

func TestActivatedSocketAccepted(t *testing.T) {
	fd, path := activatedFD(t, 0o700, 0o600)
	l, err := listenerOn(fd)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.Addr().String() != path {
		t.Fatalf("listening at %s, want %s", l.Addr(), path)
	}
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := l.Accept(); err != nil {
		t.Fatal(err)
	}
	l.Close()
	// The service manager made the socket and removes it, not the agent.
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("closing the listener removed the socket: %v", err)
	}
}

// A socket unit that leaves the socket or its directory open to others
// is refused: the checks Listen makes for its own sockets hold for one
// a service manager made.
func TestActivatedSocketChecks(t *testing.T) {
	for _, tt := range []struct {
		dir, sock os.FileMode
		want      string
	}{
		{0o700, 0o644, "SocketMode=0600"},
		{0o700, 0o666, "SocketMode=0600"},
		{0o755, 0o600, "DirectoryMode=0700"},
		{0o711, 0o600, "DirectoryMode=0700"},
	} {
		fd, _ := activatedFD(t, tt.dir, tt.sock)
		l, err := listenerOn(fd)
		if err == nil {
			l.Close()
			t.Errorf("dir %04o socket %04o accepted", tt.dir, tt.sock)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("dir %04o socket %04o: %v, want a hint of %s", tt.dir, tt.sock, err, tt.want)
		}
		// The refused descriptor is closed, not leaked.
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil {
			t.Errorf("descriptor %d still open after the refusal", fd)
		}
	}
}

// Descriptors that are not a listening UNIX stream socket bound to a
// path are refused.
func TestActivatedNotAListener(t *testing.T) {
	tcp, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.CreateTemp(t.TempDir(), "file")
	if err != nil {
		t.Fatal(err)
	}
	fileFD, _ := unix.Dup(int(f.Fd()))
	f.Close()
	sock, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0) // not listening
	if err != nil {
		t.Fatal(err)
	}
	dgram, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	abstract, err := net.ListenUnix("unix", &net.UnixAddr{Name: "@postern-test-" + filepath.Base(t.TempDir()), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	for name, fd := range map[string]int{
		"tcp":           dupListener(t, tcp),
		"file":          fileFD,
		"not listening": sock,
		"datagram":      dgram,
		"abstract":      dupListener(t, abstract),
	} {
		if l, err := listenerOn(fd); err == nil {
			l.Close()
			t.Errorf("%s accepted", name)
		}
	}
}
