package bastion

import (
	"io"
	"sync"
)

// pump passes a remote stream to the client: a reader takes what the
// host sends (counting it, keeping its tail), a writer passes it on to
// the client.
//
// While the host may send more, the reader holds at most pumpQueue bytes
// the client has not taken, so that the client's flow control reaches
// the host. Once the host has closed the channel (hostClosed), all it
// sent is in the bastion already (within the channel's window), and the
// reader takes the rest at once: the command's end, its byte counts and
// its tail are known, and recorded, without waiting for a client that
// reads slowly or not at all, which gets the rest after (drained).
//
// When the client is gone the reader keeps reading (and counting),
// dropping what it reads: a remote command blocked on flow control would
// never exit, and the bastion wants its real exit status.
type pump struct {
	dst  io.Writer
	tail *tail
	n    int64 // bytes read from the host; final once read returns

	mu     sync.Mutex
	cond   sync.Cond
	queue  [][]byte // read, not yet written to the client
	queued int      // their bytes
	eof    bool     // the reader is done
	closed bool     // the host closed the channel: read without bound
	dead   bool     // writing to the client failed
	wrote  chan struct{}
}

// pumpQueue bounds what a pump holds for the client while the host may
// still send.
const pumpQueue = 64 << 10

// pumpChunk is how much a read takes at most.
const pumpChunk = 32 << 10

var chunks = sync.Pool{New: func() any { b := make([]byte, pumpChunk); return &b }}

// newPump starts the writer of a pump to dst; read starts the reader.
func newPump(dst io.Writer, t *tail) *pump {
	p := &pump{dst: dst, tail: t, wrote: make(chan struct{})}
	p.cond.L = &p.mu
	go p.write()
	return p
}

// read takes src, the host's stream, until its end.
func (p *pump) read(src io.Reader) {
	for {
		p.mu.Lock()
		for p.queued >= pumpQueue && !p.closed && !p.dead {
			p.cond.Wait()
		}
		p.mu.Unlock()
		buf := chunks.Get().(*[]byte)
		n, err := src.Read(*buf)
		if n > 0 {
			p.n += int64(n)
			p.tail.write((*buf)[:n])
		}
		p.mu.Lock()
		if n > 0 && !p.dead {
			p.queue = append(p.queue, (*buf)[:n])
			p.queued += n
		} else {
			chunks.Put(buf)
		}
		if err != nil {
			p.eof = true
		}
		p.cond.Broadcast()
		p.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// write passes what read takes to the client, until read is done and
// all of it is passed on, or the client fails.
func (p *pump) write() {
	defer close(p.wrote)
	for {
		p.mu.Lock()
		for len(p.queue) == 0 && !p.eof {
			p.cond.Wait()
		}
		if len(p.queue) == 0 {
			p.mu.Unlock()
			return
		}
		b := p.queue[0]
		p.queue = p.queue[1:]
		p.mu.Unlock()
		_, err := p.dst.Write(b)
		n := len(b)
		b = b[:cap(b)]
		chunks.Put(&b)
		p.mu.Lock()
		p.queued -= n
		if err != nil {
			p.dead = true
			for _, b := range p.queue {
				b = b[:cap(b)]
				chunks.Put(&b)
			}
			p.queue, p.queued = nil, 0
		}
		p.cond.Broadcast()
		p.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// hostClosed lets read take the rest at once: the host closed the
// channel, and sends nothing more.
func (p *pump) hostClosed() {
	p.mu.Lock()
	p.closed = true
	p.cond.Broadcast()
	p.mu.Unlock()
}

// drained waits until the client has taken all that read took, or
// failed.
func (p *pump) drained() { <-p.wrote }

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
