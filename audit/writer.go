package audit

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Default checkpoint policy.
const (
	DefaultCheckpointEvery    = 256
	DefaultCheckpointInterval = 5 * time.Minute
)

// batchLimit bounds the bytes of one group-commit write.
const batchLimit = 1 << 20

// Config configures a writer.
type Config struct {
	Path      string            // the log file
	Recipient [32]byte          // X25519 public key entries are sealed to
	PK0       ed25519.PublicKey // the log's first checkpoint key, pinned
	KeyFile   string            // the current signing key (written by NewSetup)
	// CheckpointEvery seals after this many entries: 0 means
	// DefaultCheckpointEvery, a negative value turns count-based checkpoints
	// off. Each checkpoint commits to the value, and Verify holds the log to
	// it.
	CheckpointEvery int
	// CheckpointInterval seals entries that have waited this long: 0 means
	// DefaultCheckpointInterval, a negative value turns it off.
	CheckpointInterval time.Duration
	// Now returns the time for events without one and for checkpoints. It
	// must be safe for concurrent use. Nil means time.Now.
	Now func() time.Time
	// OnCheckpoint, if set, is called after each checkpoint is durable, with
	// the chain head it sealed, so the caller can anchor it elsewhere (the
	// vault, the system journal). It runs on the writer goroutine: it must
	// be quick and must not call the Log's methods.
	OnCheckpoint func(Anchor)
}

type itemKind uint8

const (
	itemEntry         itemKind = iota // an entry at a reserved seq
	itemCheckpoint                    // a checkpoint at a reserved seq
	itemCheckpointReq                 // seal what has been written (Checkpoint)
	itemClose                         // final checkpoint, then stop
)

type item struct {
	kind itemKind
	seq  uint64
	ct   []byte
	err  error      // sealing failed after the seq was reserved
	done chan error // nil when nobody waits
}

func answer(ch chan error, err error) {
	if ch != nil {
		ch <- err
	}
}

// Log is an open audit log writer. Its methods are safe for concurrent use.
type Log struct {
	path         string
	logID        [16]byte
	recipient    [32]byte
	now          func() time.Time
	every        int
	interval     time.Duration
	onCheckpoint func(Anchor)

	mu       sync.Mutex
	failed   error  // sticky: set once a write, sync or key update failed
	closed   bool   // no new work is accepted
	nextSeq  uint64 // next seq to hand out
	sinceCP  int    // entries handed out since the last checkpoint seq
	lastCP   uint64 // seq of the last checkpoint handed out
	inflight sync.WaitGroup

	in   chan *item
	quit chan struct{}
	head atomic.Pointer[Anchor]

	w         *writer
	closeOnce sync.Once
	closeErr  error
}

// writer owns the file. After Open returns, only the writer goroutine uses it.
type writer struct {
	l        *Log
	f        *os.File
	path     string
	dev, ino uint64
	keyFile  string
	logID    [16]byte
	now      func() time.Time

	off         int64    // bytes durable in the file
	seq         uint64   // seq of the next frame to build
	head        [32]byte // link of the last frame built
	keys        *keyState
	lastTime    int64 // time of the last checkpoint (or the header)
	maxUnsealed uint32
	unsealed    int // entries built since the last checkpoint built

	lk        *linker
	buf       []byte
	pending   map[uint64]*item        // items waiting for their turn, by seq
	cpWaiters map[uint64][]chan error // Checkpoint callers waiting on a checkpoint seq

	// Hooks for tests; nil means the real system calls.
	writeHook func(f *os.File, b []byte) (int, error)
	syncHook  func(f *os.File) error
}

// Path returns the log's file name.
func (l *Log) Path() string { return l.path }

// LogID returns the log's id in hex.
func (l *Log) LogID() string { return hex.EncodeToString(l.logID[:]) }

// Head returns the chain head after the last durable record.
func (l *Log) Head() Anchor { return *l.head.Load() }

// Append seals e, appends it and returns once it is durable (written and
// fdatasync'ed). Concurrent callers share one write and one sync. When e.Time
// is zero it is set to the current time. On any error the event is not
// recorded and the action it describes must not be taken; after a write or
// sync failure the log refuses every further Append until it is reopened.
func (l *Log) Append(e Event) error {
	_, err := l.append(e)
	return err
}

func (l *Log) append(e Event) (uint64, error) {
	if e.Type == "" {
		return 0, fmt.Errorf("%w: the event has no type", ErrNotRecorded)
	}
	if e.Time.IsZero() {
		e.Time = l.now()
	}
	e.Seq = 0
	js, err := json.Marshal(&e)
	if err != nil {
		return 0, fmt.Errorf("%w: encode event: %w", ErrNotRecorded, err)
	}
	if len(js) > MaxEventSize {
		return 0, fmt.Errorf("%w: %s event is %d bytes encoded, the limit is %d: shorten its fields", ErrNotRecorded, e.Type, len(js), MaxEventSize)
	}
	l.mu.Lock()
	if l.failed != nil {
		err := l.failed
		l.mu.Unlock()
		return 0, fmt.Errorf("%w: %w", ErrNotRecorded, err)
	}
	if l.closed {
		l.mu.Unlock()
		return 0, fmt.Errorf("%w: %w", ErrNotRecorded, ErrClosed)
	}
	seq := l.nextSeq
	l.nextSeq++
	l.sinceCP++
	var cp *item
	if l.every > 0 && l.sinceCP >= l.every {
		cp = &item{kind: itemCheckpoint, seq: l.nextSeq}
		l.lastCP = l.nextSeq
		l.nextSeq++
		l.sinceCP = 0
	}
	l.inflight.Add(1)
	l.mu.Unlock()

	// Seal outside the lock: concurrent callers encrypt in parallel and the
	// writer puts their records in seq order.
	it := &item{kind: itemEntry, seq: seq, done: make(chan error, 1)}
	it.ct, it.err = sealEntry(l.logID, seq, js, &l.recipient)
	clear(js)
	l.in <- it
	if cp != nil {
		l.in <- cp
	}
	l.inflight.Done()
	if err := <-it.done; err != nil {
		return 0, fmt.Errorf("%w: %w", ErrNotRecorded, err)
	}
	return seq, nil
}

// Close waits for appends in flight, writes a final checkpoint when entries
// are unsealed, erases the signing key from memory and releases the file and
// its lock. It returns the log's failure, if it had one.
func (l *Log) Close() error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closed = true
		l.mu.Unlock()
		l.inflight.Wait()
		req := &item{kind: itemClose, done: make(chan error, 1)}
		l.in <- req
		err := <-req.done
		<-l.quit
		l.w.keys.erase()
		if cerr := l.w.f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("audit log %s: close: %w", l.path, cerr)
		}
		l.closeErr = err
	})
	return l.closeErr
}

// run is the writer goroutine: it gathers whatever is queued, writes it with
// one write and one fdatasync, answers the callers, and repeats.
func (l *Log) run() {
	defer close(l.quit)
	w := l.w
	var timer *time.Timer
	var timerC <-chan time.Time
	batch := make([]*item, 0, 256)
	for {
		batch = batch[:0]
		select {
		case it := <-l.in:
			batch = append(batch, it)
		case <-timerC:
			timerC = nil
			w.requestCheckpoint(nil)
		}
	drain:
		for {
			select {
			case it := <-l.in:
				batch = append(batch, it)
			default:
				break drain
			}
		}
		var closeReq *item
		for _, it := range batch {
			switch it.kind {
			case itemEntry, itemCheckpoint:
				w.pending[it.seq] = it
			case itemCheckpointReq:
				w.requestCheckpoint(it.done)
			case itemClose:
				closeReq = it
			}
		}
		w.writeReady()
		if closeReq != nil {
			if timer != nil {
				timer.Stop()
			}
			w.finish(closeReq)
			return
		}
		switch {
		case w.unsealed > 0 && l.interval > 0 && timerC == nil:
			if timer == nil {
				timer = time.NewTimer(l.interval)
			} else {
				timer.Reset(l.interval)
			}
			timerC = timer.C
		case w.unsealed == 0 && timerC != nil:
			timer.Stop()
			timerC = nil
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

// writeReady writes every item whose turn has come, in batches. A batch ends
// after a checkpoint, because the key file must move on before the next one.
func (w *writer) writeReady() {
	var entries []*item
	for {
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
			return
		}
		if _, ok := w.pending[w.seq]; !ok {
			return
		}
		entries = entries[:0]
		var cp *item
		var sealErr error
		for len(w.buf) < batchLimit {
			it, ok := w.pending[w.seq]
			if !ok {
				break
			}
			delete(w.pending, w.seq)
			if it.kind == itemCheckpoint {
				cp = it
				w.addCheckpoint()
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
			continue
		}
		w.publishHead()
		for _, it := range entries {
			answer(it.done, nil)
		}
		if sealErr != nil {
			w.fail(sealErr)
			continue
		}
		if cp != nil {
			cpSeq, cpLink := w.seq-1, w.head
			if err := w.rotate(); err != nil {
				w.fail(err)
				answer(cp.done, err)
				continue
			}
			answer(cp.done, nil)
			for _, ch := range w.cpWaiters[cpSeq] {
				answer(ch, nil)
			}
			delete(w.cpWaiters, cpSeq)
			w.notifyCheckpoint(cpSeq, cpLink)
		}
	}
}

// finish writes the final checkpoint and answers Close.
func (w *writer) finish(closeReq *item) {
	if w.failure() == nil && w.unsealed > 0 {
		w.requestCheckpoint(nil)
		w.writeReady()
	}
	answer(closeReq.done, w.failure())
}

func (w *writer) addEntry(ct []byte) {
	w.buf, w.head = w.lk.appendFrame(w.buf, recEntry, w.seq, w.head, ct)
	w.seq++
	w.unsealed++
}

func (w *writer) publishHead() {
	w.l.head.Store(&Anchor{LogID: hex.EncodeToString(w.logID[:]), Seq: w.seq - 1, Link: hex.EncodeToString(w.head[:])})
}

// flush writes the built frames with one write and one fdatasync, after
// checking that nobody else changed the file.
func (w *writer) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	if err := w.checkFile(); err != nil {
		return err
	}
	var n int
	var err error
	if w.writeHook != nil {
		n, err = w.writeHook(w.f, w.buf)
	} else {
		n, err = w.f.Write(w.buf)
	}
	if err == nil && n != len(w.buf) {
		err = io.ErrShortWrite
	}
	if err == nil {
		if w.syncHook != nil {
			err = w.syncHook(w.f)
		} else {
			err = datasync(w.f)
		}
		if err != nil {
			err = fmt.Errorf("fdatasync: %w", err)
		}
	}
	if err != nil {
		// Leave the file ending on a record boundary if we can; if not, the
		// next Open finds a torn tail and cuts it.
		if terr := w.f.Truncate(w.off); terr == nil {
			datasync(w.f)
		}
		return fmt.Errorf("audit log %s: writing %d bytes at offset %d failed: %w; the log refuses appends until it is reopened", w.path, len(w.buf), w.off, err)
	}
	w.off += int64(n)
	if cap(w.buf) > 4*batchLimit {
		w.buf = nil
	} else {
		w.buf = w.buf[:0]
	}
	return nil
}

// checkFile refuses to write when someone else wrote to, truncated, replaced
// or removed the log since the last write.
func (w *writer) checkFile() error {
	fi, err := w.f.Stat()
	if err != nil {
		return fmt.Errorf("audit log %s: stat: %w", w.path, err)
	}
	if fi.Size() != w.off {
		return fmt.Errorf("audit log %s is %d bytes but this writer left it at %d: another process wrote to or truncated it; nothing more was written; verify the log and move it aside", w.path, fi.Size(), w.off)
	}
	pfi, err := os.Stat(w.path)
	if err != nil {
		return fmt.Errorf("audit log %s was removed or renamed while open (%w); nothing more was written", w.path, err)
	}
	if dev, ino, ok := fileID(pfi); ok && (dev != w.dev || ino != w.ino) {
		return fmt.Errorf("audit log %s was replaced by another file while open; nothing more was written; verify both and keep the original", w.path)
	}
	return nil
}

func clampUint32(n int) uint32 {
	if n <= 0 {
		return 0
	}
	if n > math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(n)
}
