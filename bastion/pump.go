package bastion

import (
	"io"
	"sync"
)

// pump copies a remote stream to the client. When the client is gone it
// keeps reading (and counting) instead of stopping: a remote command
// blocked on flow control would never exit, and the bastion wants its
// real exit status.
type pump struct {
	dst  io.Writer
	tail *tail
	n    int64

	mu   sync.Mutex
	dead bool
}

func (p *pump) copy(src io.Reader) {
	buf := make([]byte, 32*1024)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.n += int64(n)
			p.tail.write(buf[:n])
			if !p.failed() {
				if _, werr := p.dst.Write(buf[:n]); werr != nil {
					p.mu.Lock()
					p.dead = true
					p.mu.Unlock()
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// failed reports whether writing to the client failed.
func (p *pump) failed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dead
}

// countingWriter counts the bytes written through it. Count waits for a
// write in progress: the host may have read those bytes and ended before
// the write returned, and they count.
type countingWriter struct {
	w  io.Writer
	mu sync.Mutex
	n  int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Count returns the bytes written so far. Call it once the channel the
// writer feeds has closed, so that a write in progress returns.
func (c *countingWriter) Count() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}
