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
	var handled, exhausted atomic.Int32
	// closed has a value once a served connection is closed: until then
	// its descriptor is the process's, and the one it frees once closed
	// would be free for the accept the test means to fail.
	closed := make(chan struct{}, 1)
	p := serveForTest(t, func(c *net.UnixConn) {
		handled.Add(1)
		c.Write([]byte("served\n"))
		c.Close()
		closed <- struct{}{}
	}, func(error) { exhausted.Add(1) }, func(c *net.UnixConn) {
		c.Write([]byte("refused\n"))
	})
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

// serveForTest listens on a socket in a temporary directory and runs
// Serve on it until the test ends; it returns the socket's path.
func serveForTest(t *testing.T, handle func(*net.UnixConn), exhausted func(error), refuse func(*net.UnixConn)) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "s.sock")
	l, err := Listen(p)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, l, &wg, handle, exhausted, refuse) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		wg.Wait()
	})
	return p
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

// The reserve spent and not taken back (the descriptor a refusal freed
// went to another connection first) is taken back when a connection
// served ends: a server that accepted on its last descriptor, and so
// could take none into reserve, would otherwise hold none when it next
// runs out, and leave that client waiting in the listen queue.
func TestServeTakesTheReserveBackWhenAConnectionEnds(t *testing.T) {
	// The first connection is served at once (Serve is running, its
	// reserve filled); the second waits for release.
	first, accepted, waiting := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var n atomic.Int32
	p := serveForTest(t, func(c *net.UnixConn) {
		if n.Add(1) == 1 {
			c.Write([]byte("served\n"))
			c.Close()
			close(first)
			return
		}
		close(accepted)
		<-waiting
		c.Close()
	}, nil, nil)
	release := sync.OnceFunc(func() { close(waiting) })
	t.Cleanup(release) // before Serve is stopped
	if got := dialRaw(t, p); got != "served\n" {
		t.Fatalf("before running out: %q", got)
	}
	<-first
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	// Out of descriptors, the reserve spent: the connection takes the
	// descriptor the reserve gave up, and none is left to take back.
	restore := nofiles.Exhaust(t)
	spare.mu.Lock()
	if spare.f == nil {
		spare.mu.Unlock()
		restore()
		t.Fatal("no descriptor in reserve to begin with")
	}
	spare.f.Close()
	spare.f = nil
	spare.held.Store(false)
	spare.mu.Unlock()
	if err := syscall.Connect(fd, &syscall.SockaddrUnix{Name: p}); err != nil {
		restore()
		t.Fatal(err)
	}
	select {
	case <-accepted:
	case <-time.After(10 * time.Second):
		restore()
		t.Fatal("the connection was not accepted on the last descriptor")
	}
	heldThen := spare.held.Load()
	restore()
	if heldThen {
		t.Fatal("a descriptor went into reserve while the process had none free")
	}
	release()
	for deadline := time.Now().Add(10 * time.Second); !spare.held.Load(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no descriptor back in reserve 10s after the connection ended")
		}
	}
}
