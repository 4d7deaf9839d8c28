package audit

import (
	"errors"
	"runtime"
	"sync"
)

// Reading a log is three stages: the scanner verifies the records in order
// (framing, links, checkpoint signatures), workers decrypt and decode the
// entries that verified, and the caller's function receives the events in
// log order. The scanner cuts the records into batches, hands each batch to
// the workers and, in the same order, to the caller's side, which waits
// for each batch in turn. Entries are decrypted only after they verified,
// exactly as in a serial read; memory is bounded by the batches in flight.
//
// A batch ends preferably at a checkpoint, where the writer starts a new key
// chain, so that a worker rarely has to derive a chain that another worker
// has derived already.

const (
	batchMin      = 256     // records before a batch may end at a checkpoint
	batchMax      = 512     // records in a batch at most
	batchMaxBytes = 1 << 20 // ciphertext bytes in a batch at most
	maxWorkers    = 4
)

// readWorkers is the number of workers a read uses.
func readWorkers() int { return min(max(runtime.GOMAXPROCS(0), 1), maxWorkers) }

// errReadStopped stops the scanner when the caller's side gave up.
var errReadStopped = errors.New("audit read stopped")

// batchRec is one record of a batch: an entry to decrypt (its ciphertext
// is buf[start:end]) or a checkpoint's event.
type batchRec struct {
	entry      bool
	version    byte
	seq        uint64
	start, end int
	ev         Event
}

// readBatch is what a worker decrypts in one go.
type readBatch struct {
	logID  [16]byte
	recs   []batchRec
	buf    []byte
	events []Event
	// For a read that passes JSON: the events' JSON back to back, and
	// where each ends.
	js   []byte
	ends []int
	err  error // the error of the record after the last one passed
	done chan struct{}
}

func (b *readBatch) reset() {
	b.recs, b.buf, b.events, b.js, b.ends, b.err = b.recs[:0], b.buf[:0], b.events[:0], b.js[:0], b.ends[:0], nil
	b.done = make(chan struct{})
}

// passed returns how many records of b the workers turned into events.
func (b *readBatch) passed() int { return len(b.events) + len(b.ends) }

// readPipeline carries batches from the scanner to the workers and on to
// the caller's side.
type readPipeline struct {
	json    bool // the events' JSON, not the events
	cur     *readBatch
	jobs    chan *readBatch // to the workers
	order   chan *readBatch // to the caller's side, in log order
	free    chan *readBatch
	stop    chan struct{} // closed when the caller's side gave up
	stopped sync.Once
	workers sync.WaitGroup
}

func newReadPipeline(identity [32]byte, workers int, json bool) *readPipeline {
	p := &readPipeline{
		json:  json,
		jobs:  make(chan *readBatch, workers),
		order: make(chan *readBatch, 2*workers),
		free:  make(chan *readBatch, 3*workers+2),
		stop:  make(chan struct{}),
	}
	for range workers {
		p.workers.Add(1)
		go p.work(identity)
	}
	return p
}

// work decrypts batches until the scanner has finished.
func (p *readPipeline) work(identity [32]byte) {
	defer p.workers.Done()
	d, err := newDecoder(identity, sink{})
	if err != nil {
		for b := range p.jobs {
			b.err = err
			close(b.done)
		}
		return
	}
	defer d.op.erase()
	for b := range p.jobs {
		d.logID = b.logID
		for i := range b.recs {
			if b.err = p.turn(d, b, &b.recs[i]); b.err != nil {
				break
			}
		}
		close(b.done)
	}
}

// turn makes an event, or its JSON, of a record of b.
func (p *readPipeline) turn(d *decoder, b *readBatch, r *batchRec) error {
	var err error
	switch {
	case p.json && r.entry:
		b.js, err = d.eventJSON(b.js, r.version, r.seq, b.buf[r.start:r.end])
	case p.json:
		b.js, err = AppendEventJSON(b.js, &r.ev)
	case r.entry:
		var e Event
		if e, err = d.event(r.version, r.seq, b.buf[r.start:r.end]); err == nil {
			b.events = append(b.events, e)
		}
	default:
		b.events = append(b.events, r.ev)
	}
	if err == nil && p.json {
		b.ends = append(b.ends, len(b.js))
	}
	return err
}

func (p *readPipeline) batch() *readBatch {
	if p.cur == nil {
		select {
		case p.cur = <-p.free:
		default:
			p.cur = &readBatch{}
		}
		p.cur.reset()
	}
	return p.cur
}

// entry adds an entry that verified; ct is copied.
func (p *readPipeline) entry(logID [16]byte, version byte, seq uint64, ct []byte) error {
	b := p.batch()
	b.logID = logID
	start := len(b.buf)
	b.buf = append(b.buf, ct...)
	b.recs = append(b.recs, batchRec{entry: true, version: version, seq: seq, start: start, end: len(b.buf)})
	if len(b.recs) >= batchMax || len(b.buf) >= batchMaxBytes {
		return p.send()
	}
	return nil
}

// event adds a checkpoint's event.
func (p *readPipeline) event(e Event) error {
	b := p.batch()
	b.recs = append(b.recs, batchRec{seq: e.Seq, ev: e})
	if len(b.recs) >= batchMin {
		return p.send()
	}
	return nil
}

// send hands the current batch on.
func (p *readPipeline) send() error {
	b := p.cur
	p.cur = nil
	select {
	case <-p.stop:
		return errReadStopped
	default:
	}
	p.jobs <- b
	p.order <- b
	return nil
}

// finish hands on the last batch and ends the workers; the scanner calls it
// when it has finished.
func (p *readPipeline) finish() {
	if p.cur != nil && len(p.cur.recs) > 0 {
		p.send()
	}
	close(p.jobs)
	close(p.order)
}

// deliver passes the events to out in log order until the scanner has
// finished, and returns the first error of a worker or of out; after one
// it stops the scanner and waits for the workers.
func (p *readPipeline) deliver(out sink) error {
	var err error
	for b := range p.order {
		<-b.done
		if err == nil {
			err = b.deliver(out)
			if err == nil {
				err = b.err
			}
			if err != nil {
				p.stopped.Do(func() { close(p.stop) })
			}
		}
		clear(b.events)
		select {
		case p.free <- b:
		default:
		}
	}
	p.workers.Wait()
	return err
}

// deliver passes the events the workers made of b to out.
func (b *readBatch) deliver(out sink) error {
	for i := range b.events {
		if err := out.event(b.events[i]); err != nil {
			return err
		}
	}
	start := 0
	for _, end := range b.ends {
		if err := out.json(b.js[start:end]); err != nil {
			return err
		}
		start = end
	}
	return nil
}
