package gateway

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
)

// epochCounter is the vault epoch. It is kept in a small state file so
// that epochs never repeat across gateway restarts, which keeps the audit
// log unambiguous; authority never depends on the file (a grant is also
// bound to the gateway's boot id, which is never stored).
type epochCounter struct {
	path string
	mu   sync.Mutex
	n    uint64
	err  error // the last error writing the file, reported by status
}

func loadEpoch(path string) *epochCounter {
	e := &epochCounter{path: path}
	if b, err := os.ReadFile(path); err == nil {
		e.n, _ = strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64)
	}
	return e
}

// Get returns the current epoch.
func (e *epochCounter) Get() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n
}

// Bump increments the epoch and records it.
func (e *epochCounter) Bump() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n++
	e.err = writeFileAtomic(e.path, []byte(strconv.FormatUint(e.n, 10)+"\n"))
	return e.n
}

// writeFileAtomic replaces path with data (temp file, rename).
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

func inode(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}
