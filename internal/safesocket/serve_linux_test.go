package safesocket

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/postern/postern/internal/procid/proctest/nofiles"
)

// A server out of descriptors does not leave a client waiting in the
// listen queue for as long as the client waits: it spends the descriptor
// it holds in reserve to let the client in and refuse it, and serves as
// before once descriptors are back. Without the reserve the client below
// waits for its read's bound (10 s) and the test fails.
func TestServeRefusesOnTheReserveWhenOutOfDescriptors(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s.sock")
	l, err := Listen(p)
	if err != nil {
		t.Fatal(err)
	}
	var handled, exhausted atomic.Int32
	// closed has a value once a served connection is closed: until then
	// its descriptor is the process's, and the one it frees once closed
	// would be free for the accept the test means to fail.
	closed := make(chan struct{}, 1)
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- Serve(ctx, l, &wg, func(c *net.UnixConn) {
			handled.Add(1)
			c.Write([]byte("served\n"))
			c.Close()
			closed <- struct{}{}
		}, func(error) { exhausted.Add(1) }, func(c *net.UnixConn) {
			c.Write([]byte("refused\n"))
		})
	}()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		wg.Wait()
	}()
	if got := dialRaw(t, p); got != "served\n" {
		t.Fatalf("before running out: %q", got)
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the served connection was not closed")
	}

	// The client's socket is made before the process runs out: connect
	// needs no descriptor more.
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &syscall.Timeval{Sec: 10})
	restore := nofiles.Exhaust(t)
	if err := syscall.Connect(fd, &syscall.SockaddrUnix{Name: p}); err != nil {
		restore()
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, err := syscall.Read(fd, buf)
	restore()
	if err != nil || string(buf[:max(n, 0)]) != "refused\n" {
		t.Fatalf("a client of a server out of descriptors read %q, %v; want a refusal at once", buf[:max(n, 0)], err)
	}
	if handled.Load() != 1 || exhausted.Load() < 2 {
		t.Errorf("handled %d connections (want 1, before running out), exhausted called %d times (want 2 or more)", handled.Load(), exhausted.Load())
	}
	// Descriptors back, the reserve taken back: served as before, and
	// refused again the next time.
	if got := dialRaw(t, p); got != "served\n" {
		t.Fatalf("after descriptors are back: %q", got)
	}
	spare.mu.Lock()
	held := spare.f != nil
	spare.mu.Unlock()
	if !held {
		t.Errorf("no descriptor back in reserve after the refusal")
	}
}

// dialRaw connects to the socket at p and reads one line.
func dialRaw(t *testing.T, p string) string {
	t.Helper()
	c, err := net.Dial("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	if err != nil && !errors.Is(err, net.ErrClosed) {
		t.Fatalf("reading: %v", err)
	}
	return string(buf[:n])
}
