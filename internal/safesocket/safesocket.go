// Package safesocket creates the gateway's unix sockets: in a directory
// only the user can enter (0700), with the socket itself 0600, replacing an
// existing socket only when nothing answers on it. Permissions are the
// first fence; the gateway still checks the peer's uid on every
// connection. A socket a service manager made and passed (socket
// activation, Inherited) is held to the same modes.
//
// Serve accepts on such a socket and never stops for want of a
// resource; a process out of descriptors spends the one it holds in
// reserve to tell a waiting client so, rather than leave it waiting.
package safesocket

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// maxPath is the longest socket path Linux accepts (sun_path is 108 bytes
// with the terminating NUL).
const maxPath = 107

// Listen creates a listening socket at path. A missing directory is
// created with mode 0700. A socket file already at path is removed only if
// a connection to it is refused (a stale socket left by a crash); if
// something answers, Listen fails. Closing the listener removes the file.
func Listen(path string) (*net.UnixListener, error) {
	if len(path) > maxPath {
		return nil, fmt.Errorf("socket path %s is longer than %d bytes", path, maxPath)
	}
	dir := filepath.Dir(path)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&fs.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket; remove it or choose another path", path)
		}
		c, err := net.DialTimeout("unix", path, time.Second)
		if err == nil {
			c.Close()
			return nil, fmt.Errorf("%s is in use by a running agent", path)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("%s exists and cannot be probed: %w", path, err)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("removing stale socket: %w", err)
		}
	}
	// The umask makes the socket 0600 from the moment it exists; the
	// chmod below repeats it for file systems that ignore the umask.
	old := syscall.Umask(0o177)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	syscall.Umask(old)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// PrivateDir creates a fresh directory, mode 0700, for an agent started
// without a socket path, as ssh-agent does ($TMPDIR/postern-XXXXXXXXXX).
func PrivateDir() (string, error) {
	return os.MkdirTemp("", "postern-")
}

// CheckDir reports whether dir lets other users in, which a socket path
// given by the user (-a) may do. The result is a warning, not an error:
// ssh-agent accepts such paths.
func CheckDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("directory %s is accessible to other users (mode %04o); the socket is 0600 and peers are checked, but a private directory is safer", dir, fi.Mode().Perm())
	}
	return nil
}
