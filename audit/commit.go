package audit

import (
	"encoding/hex"
	"fmt"
	"io"
	"time"
)

// Committing: records are taken in seq order, their frames built, and each
// batch written over the zeros of the current segment with one write and
// one fdatasync (group commit); the writer moves to the next segment when a
// batch does not fit, and answers the appenders.

// closeFiles closes the current segment, the lock and a prepared segment.
func (w *writer) closeFiles() error {
	var err error
	if w.seg != nil && w.seg.f != w.lock {
		err = w.seg.f.Close()
	}
	if cerr := w.lock.Close(); err == nil {
		err = cerr
	}
	if w.prepared != nil {
		if r := <-w.prepared; r.seg != nil {
			r.seg.f.Close()
		}
		w.prepared = nil
	}
	return err
}

// submit queues records whose seqs are reserved and writes whatever is
// ready, unless another goroutine is writing: then that one writes them
// when its write is done. The goroutine that writes is the leader of a
// group commit: it takes every record whose turn has come, writes them
// with one write and one fdatasync, answers their appenders, and goes on
// while more are ready, unless there is another to take the lead
// (handOff): then the leader returns to its own caller. An appender that finds nobody writing does the write itself,
// with no hand-off to another goroutine.
func (w *writer) submit(its ...*item) {
	w.cmu.Lock()
	for _, it := range its {
		if it != nil {
			w.pending[it.seq] = it
		}
	}
	if w.flushing {
		w.cmu.Unlock()
		return
	}
	w.flushing = true
	w.cmu.Unlock()
	w.lead()
}

// lead writes batches while records are ready; w.flushing is set.
func (w *writer) lead() {
	var batch []*item
	for {
		w.cmu.Lock()
		if err := w.failure(); err != nil {
			for seq, it := range w.pending {
				answer(it.done, err)
				delete(w.pending, seq)
			}
			for seq, ws := range w.cpWaiters {
				for _, ch := range ws {
					answer(ch, err)
				}
				delete(w.cpWaiters, seq)
			}
			w.flushing = false
			w.cmu.Unlock()
			return
		}
		// The records whose turn has come, up to a write's worth, ending
		// after a checkpoint: the key file must move on before the next.
		batch = batch[:0]
		size, limit := 0, w.batchLimit()
		for next := w.seq; size < limit; next++ {
			it, ok := w.pending[next]
			if !ok {
				break
			}
			delete(w.pending, next)
			batch = append(batch, it)
			size += len(it.ct) + frameHeaderSize + bodyFixedSize + linkSize
			if it.kind == itemCheckpoint || it.err != nil {
				break
			}
		}
		if len(batch) == 0 {
			w.flushing = false
			w.cmu.Unlock()
			return
		}
		w.cmu.Unlock()
		w.writeBatch(batch)
		if w.handOff() {
			return
		}
	}
}

// handOff passes the lead on when the next record waits, and reports
// whether it did. The goroutine that wrote a batch is an appender too,
// whose caller waits for it: it returns to it rather than write the
// batches of records that came while it wrote. The lead goes to the
// appender of the next record when it waits in Append, and otherwise (a
// record of Start's or Enter's, whose caller may be busy, or a
// checkpoint) to a goroutine of its own.
func (w *writer) handOff() bool {
	w.cmu.Lock()
	defer w.cmu.Unlock()
	next, ok := w.pending[w.seq]
	if !ok || w.failure() != nil {
		return false
	}
	if next.leads {
		next.done <- errLead
	} else {
		go w.lead()
	}
	return true
}

// writeBatch builds the frames of a batch, writes them, answers their
// appenders and, after a checkpoint, moves the key file on.
func (w *writer) writeBatch(batch []*item) {
	var entries []*item
	var cp *item
	var sealErr error
	for _, it := range batch {
		if it.kind == itemCheckpoint {
			cp = it
			if err := w.addCheckpoint(it.sum); err != nil {
				sealErr = fmt.Errorf("audit log %s: seal checkpoint %d: %w; the log refuses appends until it is reopened", w.path, it.seq, err)
			}
			break
		}
		if it.err != nil {
			sealErr = fmt.Errorf("audit log %s: seal entry %d: %w; the log refuses appends until it is reopened", w.path, it.seq, it.err)
			answer(it.done, sealErr)
			break
		}
		w.addEntry(it.ct)
		entries = append(entries, it)
	}
	if err := w.flush(); err != nil {
		w.fail(err)
		for _, it := range entries {
			answer(it.done, err)
		}
		if cp != nil {
			answer(cp.done, err)
		}
		return
	}
	w.publishHead()
	for _, it := range entries {
		answer(it.done, nil)
	}
	if sealErr != nil {
		w.fail(sealErr)
		if cp != nil {
			answer(cp.done, sealErr)
		}
		return
	}
	if cp == nil {
		w.cmu.Lock()
		w.durable = w.seq
		w.cmu.Unlock()
		return
	}
	cpSeq, cpLink := w.seq-1, w.head
	if err := w.rotate(); err != nil {
		w.fail(err)
		answer(cp.done, err)
		return
	}
	// The anchor goes out before anyone waiting for the checkpoint is
	// told: Close and Checkpoint return with it passed on.
	w.notifyCheckpoint(cpSeq, cpLink)
	answer(cp.done, nil)
	w.cmu.Lock()
	w.durable = w.seq
	for _, ch := range w.cpWaiters[cpSeq] {
		answer(ch, nil)
	}
	delete(w.cpWaiters, cpSeq)
	w.cmu.Unlock()
}

// tick checkpoints entries that have waited CheckpointInterval: it waits
// for the first entry after a checkpoint, then for the interval.
func (l *Log) tick() {
	defer close(l.tickDone)
	for {
		select {
		case <-l.unsealed:
		case <-l.quit:
			return
		}
		t := time.NewTimer(l.interval)
		select {
		case <-t.C:
			l.w.requestCheckpoint(nil)
		case <-l.quit:
			t.Stop()
			return
		}
	}
}

func (w *writer) failure() error {
	w.l.mu.Lock()
	defer w.l.mu.Unlock()
	return w.l.failed
}

func (w *writer) fail(err error) {
	w.l.mu.Lock()
	if w.l.failed == nil {
		w.l.failed = err
	}
	w.l.mu.Unlock()
}

// batchLimit bounds a batch so that it always fits an empty segment.
func (w *writer) batchLimit() int {
	return int(min(batchLimit, segmentSize(w.first, 1)/4))
}

func (w *writer) addEntry(ct []byte) {
	w.buf, w.head = w.lk.appendFrame(w.buf, recEntry, w.seq, w.head, ct)
	w.seq++
	w.unsealed++
}

func (w *writer) publishHead() {
	w.l.head.Store(&Anchor{LogID: hex.EncodeToString(w.logID[:]), Seq: w.seq - 1, Link: hex.EncodeToString(w.head[:])})
}

// flush writes the built frames over the zeros of the current segment with
// one write and one fdatasync, after checking that nobody else changed the
// file. It moves to the next segment first when they do not fit.
func (w *writer) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	if !w.seg.prealloc || w.seg.off+int64(len(w.buf)) > w.seg.size {
		if err := w.cut(); err != nil {
			return fmt.Errorf("audit log %s: %w; the log refuses appends until it is reopened", w.path, err)
		}
	}
	s := w.seg
	if err := w.checkFile(); err != nil {
		return err
	}
	var n int
	var err error
	if w.writeHook != nil {
		n, err = w.writeHook(s.f, w.buf, s.off)
	} else {
		n, err = s.f.WriteAt(w.buf, s.off)
	}
	if err == nil && n != len(w.buf) {
		err = io.ErrShortWrite
	}
	if err == nil {
		if w.syncHook != nil {
			err = w.syncHook(s.f)
		} else {
			err = datasync(s.f)
		}
		if err != nil {
			err = fmt.Errorf("fdatasync: %w", err)
		}
	}
	if err != nil {
		// Leave zeros after the last record if we can; if not, the next
		// Open finds a torn tail and saves and clears it.
		if _, zerr := s.f.WriteAt(make([]byte, len(w.buf)), s.off); zerr == nil {
			datasync(s.f)
		}
		return fmt.Errorf("audit log %s: writing %d bytes at offset %d of %s failed: %w; the log refuses appends until it is reopened", w.path, len(w.buf), s.off, s.path, err)
	}
	s.off += int64(n)
	s.last = w.head
	if cap(w.buf) > 4*batchLimit {
		w.buf = nil
	} else {
		w.buf = w.buf[:0]
	}
	if w.prepared == nil && s.off > s.size/2 {
		w.prepare()
	}
	return nil
}

// prepare starts making the next segment.
func (w *writer) prepare() {
	ch := make(chan prepResult, 1)
	w.prepared = ch
	index := w.seg.index + 1
	size := segmentSize(w.first, index)
	go func() {
		s, err := createSegment(w.path, index, size)
		ch <- prepResult{s, err}
	}()
}

// cut moves the writer to the next segment, waiting for it to be made.
// The zeros left at the end of the current one are free space.
func (w *writer) cut() error {
	if w.prepared == nil {
		w.prepare()
	}
	r := <-w.prepared
	w.prepared = nil
	if r.err != nil {
		return r.err
	}
	if w.seg.f != w.lock {
		w.seg.f.Close()
	}
	w.seg = r.seg
	return nil
}

// checkFile refuses to write when someone else wrote to, truncated,
// extended, replaced or removed the current segment since the last write,
// or changed the last record in it.
func (w *writer) checkFile() error {
	s := w.seg
	size, err := sizeQuiet(s.f)
	if err != nil {
		return fmt.Errorf("audit log %s: stat: %w", s.path, err)
	}
	if size != s.size {
		return fmt.Errorf("audit log %s is %d bytes but this writer left it at %d: another process wrote to or truncated it; nothing more was written; verify the log and move it aside", s.path, size, s.size)
	}
	dev, ino, err := statPathQuiet(s.path)
	if err != nil {
		return fmt.Errorf("audit log %s was removed or renamed while open (%w); nothing more was written", s.path, err)
	}
	if dev != s.dev || ino != s.ino {
		return fmt.Errorf("audit log %s was replaced by another file while open; nothing more was written; verify both and keep the original", s.path)
	}
	// The link of the last record, and the zeros after it, in one read.
	var b [linkSize + frameHeaderSize]byte
	read, at := b[:], s.off-linkSize
	if s.off == 0 {
		read, at = b[linkSize:], 0
	}
	if _, err := s.f.ReadAt(read, at); err != nil && err != io.EOF {
		return fmt.Errorf("audit log %s: read: %w", s.path, err)
	}
	if s.off > 0 && [linkSize]byte(b[:linkSize]) != s.last {
		return fmt.Errorf("audit log %s: the last record this writer wrote, ending at offset %d, was changed: another process wrote to it; nothing more was written; verify the log and move it aside", s.path, s.off)
	}
	if [frameHeaderSize]byte(b[linkSize:]) != ([frameHeaderSize]byte{}) {
		return fmt.Errorf("audit log %s has bytes after the records this writer wrote, at offset %d: another process wrote to it; nothing more was written; verify the log and move it aside", s.path, s.off)
	}
	return nil
}
