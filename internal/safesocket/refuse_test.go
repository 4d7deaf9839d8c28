package safesocket

import (
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
)

// unixPair returns the two ends of a connected pair of Unix sockets.
func unixPair(t *testing.T) (*net.UnixConn, *net.UnixConn) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	conn := func(fd int) *net.UnixConn {
		f := os.NewFile(uintptr(fd), "pair")
		defer f.Close()
		c, err := net.FileConn(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c.(*net.UnixConn)
	}
	return conn(fds[0]), conn(fds[1])
}

// A refused client that sends nothing is let go within RefuseTime: the
// refusal's wait for its request ends at the deadline Refuse set.
func TestARefusalWaitsNoLongerThanRefuseTime(t *testing.T) {
	ours, _ := unixPair(t)
	var readErr error
	if !Refuse(ours, func(c *net.UnixConn) { _, readErr = c.Read(make([]byte, 1)) }) {
		t.Fatal("a refusal with none under way was not answered")
	}
	if !errors.Is(readErr, os.ErrDeadlineExceeded) {
		t.Fatalf("the refusal's read of a client that sends nothing ended with %v, want the deadline", readErr)
	}
}

// At most maxRefusing refusals are under way at once: a client that
// comes past them is not answered (the caller closes it at once), and
// once they end the next is answered again.
func TestRefusalsUnderWayAreBounded(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, maxRefusing)
	done := make(chan bool, maxRefusing)
	for range maxRefusing {
		c, _ := unixPair(t)
		go func() {
			done <- Refuse(c, func(*net.UnixConn) {
				started <- struct{}{}
				<-release
			})
		}()
	}
	for range maxRefusing {
		<-started
	}
	past, _ := unixPair(t)
	if Refuse(past, func(*net.UnixConn) { t.Error("a refusal past the bound was answered") }) {
		t.Errorf("with %d refusals under way, Refuse reports answering one more", maxRefusing)
	}
	close(release)
	for range maxRefusing {
		if !<-done {
			t.Error("a refusal within the bound reports it was not answered")
		}
	}
	answered := false
	if !Refuse(past, func(*net.UnixConn) { answered = true }) || !answered {
		t.Error("once the refusals under way ended, the next was not answered")
	}
}
