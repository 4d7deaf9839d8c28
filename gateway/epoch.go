package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/postern/postern/internal/atomicfile"
	"github.com/postern/postern/internal/smallfile"
)

// epochCounter is the vault epoch. It is kept in a small state file so
// that epochs never repeat across gateway restarts, which keeps the audit
// log unambiguous; authority never depends on the file (a grant is also
// bound to the gateway's boot id, which is never stored).
//
// A file that cannot be read (emptied, garbage, something else in its
// place) does not start the count again from 0, which would repeat the
// epochs it counted: the count goes on from the time in seconds since
// 1970, above any count of locks and unlocks a file could have reached,
// and status says why (Err).
//
// An epoch that could not be written (a full disk) is written again, at
// most every epochRetry, when the epoch is next read, and when the
// gateway stops (Flush), so that a restart once space is back does not
// count again the epochs counted meanwhile.
type epochCounter struct {
	path    string
	mu      sync.Mutex
	n       uint64
	readErr error     // why the file could not be read at start
	err     error     // the last error writing the file
	tried   time.Time // when the file was last written, or tried
}

// epochRetry is how often an epoch that could not be written is tried
// again.
const epochRetry = time.Second

// maxEpochFile bounds the epoch file read: a number and a newline.
const maxEpochFile = 64

func loadEpoch(path string) *epochCounter {
	e := &epochCounter{path: path}
	b, err := smallfile.Read(path, maxEpochFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return e // the first start
	case err == nil:
		if e.n, err = strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64); err == nil {
			return e
		}
		err = fmt.Errorf("%s holds no epoch: %q", path, b)
	}
	e.n = uint64(time.Now().Unix())
	e.readErr = fmt.Errorf("the vault epoch file could not be read, so epochs go on from %d: %w", e.n, err)
	return e
}

// Err returns what is wrong with the epoch file: why it could not be read
// at start, or why the last epoch could not be written; nil when nothing
// is.
func (e *epochCounter) Err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return errors.Join(e.readErr, e.err)
}

// Get returns the current epoch, and writes it again if it could not be
// written and epochRetry has passed since it was tried.
func (e *epochCounter) Get() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err != nil && time.Since(e.tried) >= epochRetry {
		e.save()
	}
	return e.n
}

// Bump increments the epoch and records it; err says why it could not
// be recorded (the epoch moved all the same).
func (e *epochCounter) Bump() (n uint64, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n++
	e.save()
	return e.n, e.err
}

// Flush writes the epoch again if it could not be written, and returns
// why it still cannot be.
func (e *epochCounter) Flush() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err != nil {
		e.save()
	}
	return e.err
}

// save writes the epoch to the file; e.mu held.
func (e *epochCounter) save() {
	e.tried = time.Now()
	e.err = atomicfile.Write(e.path, []byte(strconv.FormatUint(e.n, 10)+"\n"), 0o600)
}

func inode(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}
