package api

import (
	"net"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A socket-activated gateway's control socket exists from its bind, a
// moment before it listens (longer on a loaded machine): Activate
// reports the gateway started only once the control socket takes
// connections, so that the command that asked is not refused.
func TestActivateWaitsUntilTheControlSocketListens(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "agent.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	listening := make(chan error, 1)
	go func() {
		// The first connection starts the gateway, which binds its
		// control socket and listens on it a moment later.
		c, err := l.Accept()
		if err != nil {
			listening <- err
			return
		}
		defer c.Close()
		if err := unix.Bind(fd, &unix.SockaddrUnix{Name: ControlSocket(sock)}); err != nil {
			listening <- err
			return
		}
		time.Sleep(500 * time.Millisecond)
		listening <- unix.Listen(fd, 8)
	}()
	if !Activate(sock) {
		t.Fatal("Activate did not see the gateway start")
	}
	c, err := net.Dial("unix", ControlSocket(sock))
	if err != nil {
		t.Fatalf("Activate reported the gateway started while its control socket refused connections: %v", err)
	}
	c.Close()
	if err := <-listening; err != nil {
		t.Fatal(err)
	}
}
