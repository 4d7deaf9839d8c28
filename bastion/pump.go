package bastion

import (
	"io"
	"sync"
	"sync/atomic"
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

// countingWriter counts the bytes written through it; the count may be
// read while writing goes on.
type countingWriter struct {
	w io.Writer
	n atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}
