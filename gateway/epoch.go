package gateway

import (
	"bytes"
	"os"
	"strconv"
	"sync"
	"syscall"

	"github.com/postern/postern/internal/atomicfile"
	"github.com/postern/postern/internal/smallfile"
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
	if b, err := smallfile.Read(path, 4096); err == nil {
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
	e.err = atomicfile.Write(e.path, []byte(strconv.FormatUint(e.n, 10)+"\n"), 0o600)
	return e.n
}

func inode(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}
