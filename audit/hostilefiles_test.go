package audit

import (
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/postern/postern/internal/smallfile"
)

// A program with the person's uid may put anything where a segment of the
// log was: a FIFO nobody writes to, a link to /dev/zero. Verifying the log
// and opening it (the gateway's start) refuse it with an error that names
// it, in bounded time; they never wait or read for ever.
func TestSegmentThatIsNoRegularFile(t *testing.T) {
	for name, plant := range map[string]func(path string) error{
		"fifo":             func(p string) error { return syscall.Mkfifo(p, 0o600) },
		"link to a device": func(p string) error { return os.Symlink("/dev/zero", p) },
	} {
		t.Run(name, func(t *testing.T) {
			tl := newTestSetup(t)
			l := tl.open(t)
			mustAppend(t, l, ev(EventSign, "R1"))
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if err := plant(tl.path + ".000001"); err != nil {
				t.Fatal(err)
			}
			within := func(what string, f func() error) {
				t.Helper()
				done := make(chan error, 1)
				go func() { done <- f() }()
				select {
				case err := <-done:
					if !errors.Is(err, smallfile.ErrNotRegular) {
						t.Errorf("%s: %v, want an error that the segment is not a regular file", what, err)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("%s still waits after 10 s", what)
				}
			}
			within("verify", func() error {
				r, err := VerifyPath(tl.path, tl.pin())
				if err == nil && !r.OK {
					return errors.New(describe(r))
				}
				return err
			})
			within("open", func() error {
				l, err := Open(tl.cfg)
				if err == nil {
					l.Close()
				}
				return err
			})
		})
	}
}
