// Package smallfile reads the small files the gateway keeps or is
// pointed at (its configuration, state and host inventory, known_hosts)
// without trusting what is at the path.
//
// A program with the person's uid can put anything where such a file
// was: a file of many gigabytes, a symbolic link to /dev/zero, a FIFO
// that nobody writes to. os.ReadFile would read the first and the second
// until memory runs out, and wait on the third for ever. Read opens
// without blocking, refuses what is not a regular file, and reads at most
// the size its caller allows, so that such a file is an error that names
// it, never a gateway that hangs or runs out of memory.
package smallfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// ErrTooLarge is returned for a file larger than its reader allows.
var ErrTooLarge = errors.New("larger than allowed")

// ErrNotRegular is returned for a path that holds no regular file (a
// FIFO, a device, a directory, or a link to one).
var ErrNotRegular = errors.New("not a regular file")

// Open opens the regular file at path for reading, for a reader that
// reads only part of it. A missing file is an error satisfying
// errors.Is(err, fs.ErrNotExist), as with os.Open.
func Open(path string) (*os.File, os.FileInfo, error) {
	// O_NONBLOCK: opening a FIFO without a writer does not wait. What is
	// opened is then looked at, not what a stat of the path found
	// before: the path may have changed in between.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s: %w (%s)", path, ErrNotRegular, fi.Mode().Type())
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// Read returns the contents of the regular file at path, which may hold
// at most max bytes. A missing file is an error satisfying
// errors.Is(err, fs.ErrNotExist), as with os.ReadFile.
func Read(path string, max int64) ([]byte, error) {
	f, fi, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.Size() > max {
		return nil, fmt.Errorf("%s: %w: %d bytes, at most %d", path, ErrTooLarge, fi.Size(), max)
	}
	// The size can grow while it is read: never more than max.
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: %w: more than %d bytes", path, ErrTooLarge, max)
	}
	return b, nil
}
