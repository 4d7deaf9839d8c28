package safesocket

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// Inherited returns the listening socket a service manager passed to this
// process: the one named name in LISTEN_FDNAMES, or the only one passed.
// It returns nil and no error when none was passed to this process (no
// LISTEN_FDS, or a LISTEN_PID of another process). It unsets the
// variables, so that the programs the agent starts do not take them for
// theirs, closes the descriptors it does not use, and checks what it
// takes: a listening UNIX stream socket bound to a path, owned by this
// user with mode 0600, in a directory of this user's with mode 0700
// (checkActivated).
func Inherited(name string) (*net.UnixListener, error) {
	fds, pid, names := os.Getenv("LISTEN_FDS"), os.Getenv("LISTEN_PID"), os.Getenv("LISTEN_FDNAMES")
	if fds == "" {
		return nil, nil
	}
	for _, k := range []string{"LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES"} {
		os.Unsetenv(k)
	}
	n, use, err := pickListenFD(fds, pid, names, os.Getpid(), name)
	if err != nil || n == 0 {
		return nil, err
	}
	for i := 0; i < n; i++ {
		unix.CloseOnExec(listenFDsStart + i)
		if i != use {
			unix.Close(listenFDsStart + i)
		}
	}
	return listenerOn(listenFDsStart + use)
}

// listenerOn makes a listener of descriptor fd once it has checked it.
func listenerOn(fd int) (*net.UnixListener, error) {
	domain, err1 := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
	typ, err2 := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
	listening, err3 := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ACCEPTCONN)
	if err := errors.Join(err1, err2, err3); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("socket activation: descriptor %d is not a socket: %w", fd, err)
	}
	if domain != unix.AF_UNIX || typ != unix.SOCK_STREAM || listening != 1 {
		unix.Close(fd)
		return nil, fmt.Errorf("socket activation: descriptor %d is not a listening UNIX stream socket (ListenStream= with a path)", fd)
	}
	f := os.NewFile(uintptr(fd), "activated socket")
	fl, err := net.FileListener(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("socket activation: %w", err)
	}
	l, ok := fl.(*net.UnixListener)
	if !ok {
		fl.Close()
		return nil, errors.New("socket activation: the descriptor is not a UNIX socket")
	}
	// The service manager made the socket and removes it: closing the
	// listener must not.
	l.SetUnlinkOnClose(false)
	if err := checkActivated(l); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// checkActivated applies to a socket the service manager made the checks
// Listen makes for its own: bound to an absolute path, a socket owned by
// this user with mode 0600 (no bit for others), in a directory owned by
// this user that no one else can enter (0700). A unit that leaves either
// open (SocketMode=, DirectoryMode=) is refused, not warned about: the
// agent did not choose that path, the unit did.
func checkActivated(l *net.UnixListener) error {
	path := l.Addr().String()
	if !filepath.IsAbs(path) {
		return fmt.Errorf("socket activation: the socket is bound to %q, not to an absolute path", path)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("socket activation: %w", err)
	}
	if fi.Mode()&fs.ModeSocket == 0 {
		return fmt.Errorf("socket activation: %s is not a socket", path)
	}
	if err := ownedPrivate(path, fi, "SocketMode=0600"); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	di, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("socket activation: %w", err)
	}
	if !di.IsDir() {
		return fmt.Errorf("socket activation: %s is not a directory", dir)
	}
	return ownedPrivate(dir, di, "DirectoryMode=0700")
}

// ownedPrivate checks that the file at path (described by fi) belongs to
// this user and gives the group and others nothing; fix names the unit
// setting that makes it so.
func ownedPrivate(path string, fi fs.FileInfo, fix string) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !ok:
		return fmt.Errorf("socket activation: cannot read the owner of %s", path)
	case int(st.Uid) != os.Getuid():
		return fmt.Errorf("socket activation: %s belongs to uid %d, not %d", path, st.Uid, os.Getuid())
	case fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("socket activation: %s has mode %04o, open to other users; set %s in the socket unit", path, fi.Mode().Perm(), fix)
	}
	return nil
}
