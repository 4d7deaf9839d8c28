package audit

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
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

// A segment after the last one in use whose first bytes are zero but
// that holds bytes further on was not left by a writer (a write into a
// segment starts at its beginning): verification fails it, and opening
// the log refuses it, keeping it, instead of removing it as a spare and
// going on with a log that then verifies.
func TestOpenKeepsASegmentWithBytesPastItsStart(t *testing.T) {
	tl := newTestSetup(t)
	l := tl.open(t)
	mustAppend(t, l, ev(EventSign, "R1"))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	seg := segmentName(tl.path, 1)
	b := make([]byte, 2<<20)
	copy(b[3<<19:], "records a writer did not put there")
	if err := os.WriteFile(seg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := tl.verify(t); r.OK {
		t.Fatal("verify passed a segment with bytes past its start")
	}
	l, err := Open(tl.cfg)
	if err == nil {
		l.Close()
	}
	if _, serr := os.Stat(seg); !errors.Is(err, ErrDamaged) || serr != nil {
		t.Fatalf("open: %v; the segment: %v", err, serr)
	}
}

// A FIFO put where the log was does not hold up retiring it (postern
// audit new, what the error of a damaged log tells a person to run): the
// FIFO moves aside with the rest, in bounded time, where opening it to
// take its lock waited for a writer for ever.
func TestRetireALogThatIsAFIFO(t *testing.T) {
	tl := newTestSetup(t)
	l := tl.open(t)
	mustAppend(t, l, ev(EventSign, "R1"))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(tl.path); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(tl.path, 0o600); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(t.TempDir(), "retired")
	done := make(chan error, 1)
	go func() {
		_, err := Retire(filepath.Dir(tl.path), tl.path, dest)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("retiring a log that is a FIFO: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("retiring a log that is a FIFO still waits after 10 s")
	}
	if _, err := os.Lstat(tl.path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the FIFO is still where the log was: %v", err)
	}
}
