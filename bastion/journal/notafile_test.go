package journal

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// What stands at the journal's path may not be a file at all: a hostile
// run can put a named pipe there (whose open would wait for a writer), a
// directory, or a link to a device. Open and OpenReadOnly say what it
// is, as damage the person can move aside, at once, and leave it there.
func TestAJournalThatIsNotAFileIsNamedSo(t *testing.T) {
	cases := map[string]struct {
		make func(path string) error
		says string
	}{
		"named pipe": {func(path string) error { return syscall.Mkfifo(path, 0o600) }, "a named pipe"},
		"directory":  {func(path string) error { return os.Mkdir(path, 0o700) }, "a directory"},
		"device":     {func(path string) error { return os.Symlink("/dev/zero", path) }, "a device"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "journal.db")
			if err := c.make(path); err != nil {
				t.Fatal(err)
			}
			before, err := os.Lstat(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, open := range []struct {
				name string
				open func() (*Journal, error)
			}{
				{"Open", func() (*Journal, error) { return open(path, "inst", options{timeout: 200 * time.Millisecond}) }},
				{"OpenReadOnly", func() (*Journal, error) { return openReadOnly(path, 200*time.Millisecond) }},
			} {
				done := make(chan error, 1)
				go func() {
					j, err := open.open()
					if err == nil {
						j.Close()
					}
					done <- err
				}()
				select {
				case err = <-done:
				case <-time.After(10 * time.Second):
					t.Fatalf("%s of a %s at the journal's path still waits after 10 s", open.name, name)
				}
				if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "is not a regular file but "+c.says) {
					t.Fatalf("%s: %v", open.name, err)
				}
				if strings.Contains(err.Error(), "truncated") {
					t.Fatalf("%s names it a truncated file: %v", open.name, err)
				}
			}
			after, err := os.Lstat(path)
			if err != nil || after.Mode() != before.Mode() || !after.ModTime().Equal(before.ModTime()) {
				t.Fatalf("what stood at the path was changed: %v, %v", after, err)
			}
			aside := AsideName(path, time.Now())
			if moved, err := MoveAside(path, aside); !moved || err != nil {
				t.Fatalf("MoveAside: %v, %v", moved, err)
			}
			j, err := Open(path, "inst")
			if err != nil {
				t.Fatalf("Open after the move aside: %v", err)
			}
			j.Close()
		})
	}
}
