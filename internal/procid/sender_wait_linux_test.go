package procid

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// senderPair returns a SenderConn over an accepted connection and the
// client's end.
func senderPair(t *testing.T) (*SenderConn, net.Conn) {
	t.Helper()
	l, sock := listenTemp(t)
	c, s := dialAccept(t, l, sock)
	return NewSenderConn(s), c
}

// within runs read and fails the test if it has not returned after a
// minute (a bound that did not hold).
func within(t *testing.T, read func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- read() }()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatal("the read was not bounded")
		return nil
	}
}

// WaitAtMost bounds a read that waits for bytes that never come, and
// bounds the reads that follow in all: a client that sends a byte now and
// then does not keep a request open longer than the bound.
func TestWaitAtMostBoundsTheWait(t *testing.T) {
	sc, client := senderPair(t)
	sc.WaitAtMost(50 * time.Millisecond)
	var b [4]byte
	if err := within(t, func() error { _, err := sc.Read(b[:]); return err }); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read of nothing: %v, want a deadline exceeded", err)
	}
	sc.Unbound()

	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
				client.Write([]byte{1})
			}
		}
	}()
	sc.WaitAtMost(300 * time.Millisecond)
	var big [1000]byte
	start := time.Now()
	err := within(t, func() error { _, err := io.ReadFull(sc, big[:]); return err })
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a byte every 20 ms for 1000 bytes: %v after %v, want a deadline exceeded", err, time.Since(start))
	}
	sc.Unbound()
}

// Bytes that are there are read without waiting, and once unbound a read
// waits as long as it takes, even after a bound that expired.
func TestUnboundWaitsAsLongAsItTakes(t *testing.T) {
	sc, client := senderPair(t)
	client.Write([]byte("abcd"))
	sc.WaitAtMost(time.Millisecond)
	var b [4]byte
	if _, err := io.ReadFull(sc, b[:]); err != nil || string(b[:]) != "abcd" {
		t.Fatalf("read of what was there: %q %v", b, err)
	}
	sc.Unbound()
	sc.WaitAtMost(10 * time.Millisecond)
	if err := within(t, func() error { _, err := sc.Read(b[:]); return err }); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read of nothing: %v, want a deadline exceeded", err)
	}
	sc.Unbound()
	go func() {
		time.Sleep(100 * time.Millisecond)
		client.Write([]byte("efgh"))
	}()
	if err := within(t, func() error { _, err := io.ReadFull(sc, b[:]); return err }); err != nil || string(b[:]) != "efgh" {
		t.Fatalf("an unbound read: %q %v", b, err)
	}
	if pid, _ := sc.Sender(); pid != os.Getpid() {
		t.Fatalf("sender %d, want %d", pid, os.Getpid())
	}
}
