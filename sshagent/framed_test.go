package sshagent

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"
)

// A read deadline left from an earlier exchange neither lengthens a
// shorter wait nor cuts short a later one, once it has passed.
func TestFramedDeadlines(t *testing.T) {
	ours, theirs := net.Pipe()
	defer ours.Close()
	defer theirs.Close()
	f := newFramed(ours)
	reply := func(after time.Duration) {
		go func() {
			time.Sleep(after)
			theirs.Write([]byte{0, 0, 0, 1, msgSuccess})
		}()
	}

	reply(0)
	if _, err := f.recv(time.Now().Add(time.Hour)); err != nil {
		t.Fatalf("a reply within the wait: %v", err)
	}
	// Nothing comes: the wait ends at its own deadline, not the hour the
	// earlier exchange set.
	done := make(chan error, 1)
	go func() {
		_, err := f.recv(time.Now().Add(100 * time.Millisecond))
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("a wait with no reply: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a wait of 100 ms went on for 5 s")
	}
	// The deadline that ended that wait is past; a later, longer wait
	// gets its reply.
	reply(300 * time.Millisecond)
	if _, err := f.recv(time.Now().Add(time.Hour)); err != nil {
		t.Fatalf("a reply after an earlier wait timed out: %v", err)
	}
}
