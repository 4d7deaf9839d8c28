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
	"io/fs"
	"os"
	"syscall"
)

// ErrTooLarge is returned for a file larger than its reader allows.
var ErrTooLarge = errors.New("larger than allowed")

// ErrNotRegular is returned for a path that holds no regular file (a
// FIFO, a device, a directory, or a link to one), as a *NotRegularError.
var ErrNotRegular = errors.New("not a regular file")

// A NotRegularError is what was opened at Path when it was no regular
// file. It is ErrNotRegular to errors.Is.
type NotRegularError struct {
	Path string
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s: %v (%s)", e.Path, ErrNotRegular, e.Mode.Type())
}

func (e *NotRegularError) Is(target error) bool { return target == ErrNotRegular }

// Open opens the regular file at path for reading, for a reader that
// reads only part of it. A missing file is an error satisfying
// errors.Is(err, fs.ErrNotExist), as with os.Open.
func Open(path string) (*os.File, os.FileInfo, error) {
	return OpenFile(path, os.O_RDONLY, 0)
}

// OpenFile is Open with os.OpenFile's flag and perm, for a file to be
// written or created too.
func OpenFile(path string, flag int, perm os.FileMode) (*os.File, os.FileInfo, error) {
	// O_NONBLOCK: opening a FIFO without a writer (or, for writing,
	// without a reader) does not wait; it changes nothing for a regular
	// file. What is opened is then looked at, not what a stat of the
	// path found before: the path may have changed in between.
	f, err := os.OpenFile(path, flag|syscall.O_NONBLOCK|syscall.O_CLOEXEC, perm)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = &NotRegularError{Path: path, Mode: fi.Mode()}
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
