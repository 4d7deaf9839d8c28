package safesocket

import (
	"errors"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"
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
	// The bound is the process's: a refusal an earlier test left waits
	// out its second first.
	for deadline := time.Now().Add(10 * time.Second); len(refusing) > 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d refusals still under way after 10 s", len(refusing))
		}
	}
	release := make(chan struct{})
	var releasing sync.Once
	letGo := func() { releasing.Do(func() { close(release) }) }
	defer letGo()
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
		select {
		case <-started:
		case <-done:
			t.Fatalf("a refusal within the bound of %d was not answered", maxRefusing)
		}
	}
	past, _ := unixPair(t)
	if Refuse(past, func(*net.UnixConn) { t.Error("a refusal past the bound was answered") }) {
		t.Errorf("with %d refusals under way, Refuse reports answering one more", maxRefusing)
	}
	letGo()
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
