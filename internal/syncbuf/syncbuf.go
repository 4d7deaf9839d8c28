// Package syncbuf holds Buffer, a bytes.Buffer that many goroutines may
// write to and read: a log handler's output that a test reads while the
// code under test goes on logging.
package syncbuf

import (
	"bytes"
	"sync"
)

// A Buffer is a bytes.Buffer guarded by a mutex. The zero Buffer is
// empty and ready to use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
