// Package swaptest runs, in a test, the race a program of the user's can
// run against a reader that looks at what stands at a path and then
// opens the path again: it swaps the path between a regular file and a
// named pipe as fast as it can while the reader reads it. A reader that
// opens the pipe where it had found the file waits for a writer, for
// ever; one that opens the path once, and looks at what it opened, ends
// each read, with the file or a refusal of the pipe.
package swaptest

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Hang is how long a read may take before the test fails.
const Hang = 5 * time.Second

// Race puts at path a regular file holding contents, then, in turn, a
// named pipe and the file again, each renamed over the last, while read runs again and again for
// d. Every read must end within Hang. A read's error must be nil or one
// refused says is the reader's refusal of the pipe; and some reads must
// have found the file and some the pipe, or the race did not reach the
// reads.
func Race(t testing.TB, path string, contents []byte, d time.Duration, read func() error, refused func(error) bool) {
	t.Helper()
	if err := os.WriteFile(path, contents, 0o600); err != nil {
		t.Fatal(err)
	}
	stop, swapped := make(chan struct{}), make(chan int)
	go func() {
		n := 0
		defer func() { swapped <- n }()
		next := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".next")
		for ; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			var err error
			if n%2 == 0 { // the file is there: the pipe next
				err = syscall.Mkfifo(next, 0o600)
			} else {
				err = os.WriteFile(next, contents, 0o600)
			}
			if err == nil {
				err = os.Rename(next, path)
			}
			if err != nil {
				t.Error(err)
				return
			}
		}
	}()
	halt := func() int { close(stop); return <-swapped }
	var found, refusals int
	for deadline := time.Now().Add(d); time.Now().Before(deadline); {
		done := make(chan error, 1)
		go func() { done <- read() }()
		select {
		case err := <-done:
			switch {
			case err == nil:
				found++
			case refused(err):
				refusals++
			default:
				halt()
				t.Fatalf("reading %s while it is swapped for a named pipe: %v", path, err)
			}
		case <-time.After(Hang):
			halt()
			t.Fatalf("a read of %s swapped for a named pipe still waits after %v (%d reads before)", path, Hang, found+refusals)
		}
	}
	n := halt()
	t.Logf("%d reads, %d of them refused, while the file was swapped %d times", found+refusals, refusals, n)
	if found == 0 || refusals == 0 {
		t.Errorf("%d reads found the file and %d the named pipe: the swap did not reach the reads", found, refusals)
	}
}
