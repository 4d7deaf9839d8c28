package smallfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := Read(path, 6); err != nil || string(b) != "hello\n" {
		t.Fatalf("a file of the size allowed: %q, %v", b, err)
	}
	if _, err := Read(path, 5); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a file one byte too large: %v", err)
	}
	if _, err := Read(filepath.Join(dir, "missing"), 6); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a missing file: %v", err)
	}
	if _, err := Read(dir, 6); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("a directory: %v", err)
	}
	// A link to an endless device is refused at once, not read.
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(zero, 1<<20); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("a link to /dev/zero: %v", err)
	}
	// A FIFO nobody writes to does not hang the reader.
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 2)
	go func() { _, err := Read(fifo, 1<<20); done <- err }()
	go func() { _, _, err := Open(fifo); done <- err }()
	for range 2 {
		select {
		case err := <-done:
			if !errors.Is(err, ErrNotRegular) {
				t.Fatalf("a FIFO: %v", err)
			}
		case <-time.After(time.Minute):
			t.Fatal("reading a FIFO with no writer hung")
		}
	}
	// Open, for a reader of part of a file, takes any size.
	f, fi, err := Open(path)
	if err != nil || fi.Size() != 6 {
		t.Fatalf("Open: %v, %v", fi, err)
	}
	f.Close()
}

// OpenFile, for a file to be written (bbolt's), creates a missing file,
// and refuses a FIFO opened for reading and writing (which no writer
// holds back) with what it is.
func TestOpenFile(t *testing.T) {
	dir := t.TempDir()
	f, fi, err := OpenFile(filepath.Join(dir, "new"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Fatalf("creating a file: %v, %v", fi, err)
	}
	if _, err := f.Write([]byte("x")); err != nil {
		t.Fatalf("writing the file opened: %v", err)
	}
	f.Close()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err = OpenFile(fifo, os.O_RDWR|os.O_CREATE, 0o600)
	var nr *NotRegularError
	if !errors.Is(err, ErrNotRegular) || !errors.As(err, &nr) || nr.Mode&fs.ModeNamedPipe == 0 || nr.Path != fifo {
		t.Fatalf("a FIFO opened for writing: %v", err)
	}
}
