package audit

import (
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
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
	Path      string            // the log file (its first segment)
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
	// SegmentSize is the size of a new log's first segment; each next one
	// is twice as large, up to 32 MiB. 0 means DefaultSegmentSize; the
	// least is 4 record sizes (260 KiB).
	SegmentSize int64
	// Now returns the time for events without one and for checkpoints. It
	// must be safe for concurrent use. Nil means time.Now.
	Now func() time.Time
	// OnCheckpoint, if set, is called after each checkpoint is durable, with
	// the chain head it sealed, so the caller can anchor it elsewhere (the
	// vault, the system journal), and before a Checkpoint or Close that
	// waits for that checkpoint returns. It runs on the writer goroutine: it must
	// be quick and must not call the Log's methods.
	OnCheckpoint func(Anchor)
	// Anchors are chain heads of this log recorded elsewhere (as
	// VerifyOptions.Anchors). Open refuses, with ErrDamaged and changing
	// nothing, a log that ends before one of them, or that holds another
	// record where one of them names a record it reads. Anchors of
	// another log are left out.
	Anchors []Anchor
}

type itemKind uint8

const (
	itemEntry      itemKind = iota // an entry at a reserved seq
	itemCheckpoint                 // a checkpoint at a reserved seq
)

type item struct {
	kind itemKind
	seq  uint64
	ct   []byte
	sum  *pendingSummary // a checkpoint's summary
	err  error           // sealing failed after the seq was reserved
	done chan error      // nil when nobody waits
	// leads: the goroutine that waits on done can take the lead of the
	// group commit (errLead): it waits now, in Append.
	leads bool
}

// errLead, sent on an item's done, hands the group commit's lead to the
// goroutine that waits for it (see writer.handOff); the item's outcome
// follows.
var errLead = errors.New("audit: lead the group commit")

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
	seeds        *seedPool

	mu       sync.Mutex
	failed   error  // sticky: set once a write, sync or key update failed
	closed   bool   // no new work is accepted
	nextSeq  uint64 // next seq to hand out
	sinceCP  int    // entries handed out since the last checkpoint seq
	lastCP   uint64 // seq of the last checkpoint handed out
	chain    *chain // the key chain of the next entry; nil: start one
	iv       interval
	inflight sync.WaitGroup

	unsealed chan struct{} // an entry follows the last checkpoint (tick)
	quit     chan struct{}
	tickDone chan struct{}
	head     atomic.Pointer[Anchor]
	found    Anchor              // the log's end as Open found it
	foundCPs map[uint64][32]byte // links of the checkpoints Open read
	foundMin uint64              // the first record Open read

	w         *writer
	closeOnce sync.Once
	closeErr  error
}

// writer owns the files. The goroutine that leads a group commit (see
// submit) builds frames and writes; the fields under cmu are shared.
type writer struct {
	l       *Log
	lock    *os.File // the log's first file, flocked for the Log's life
	path    string
	keyFile string
	logID   [16]byte
	now     func() time.Time

	seg         *segment        // the segment records go to
	first       int64           // size of segment 0 of this log
	prepared    chan prepResult // the next segment, being made
	seq         uint64          // seq of the next frame to build
	head        [32]byte        // link of the last frame built
	keys        *keyState       // checkpoint signing keys
	lastTime    int64           // time of the last checkpoint (or the header)
	unsealed    int             // entries built since the last checkpoint built
	maxUnsealed uint32

	lk  *linker
	buf []byte

	cmu       sync.Mutex
	flushing  bool                    // a goroutine leads a group commit
	durable   uint64                  // records before this seq are durable
	pending   map[uint64]*item        // items waiting for their turn, by seq
	cpWaiters map[uint64][]chan error // Checkpoint callers waiting on a checkpoint seq

	// Hooks for tests; nil means the real system calls.
	writeHook func(f *os.File, b []byte, off int64) (int, error)
	syncHook  func(f *os.File) error
	waitHook  func() // before a checkpoint waiter is queued
}

type prepResult struct {
	seg *segment
	err error
}

// Path returns the log's file name.
func (l *Log) Path() string { return l.path }

// LogID returns the log's id in hex.
func (l *Log) LogID() string { return hex.EncodeToString(l.logID[:]) }

// Head returns the chain head after the last durable record.
func (l *Log) Head() Anchor { return *l.head.Load() }

// Found returns the chain head after the last record Open found on disk,
// before the records it added itself (the record of a torn write it
// cleared, a checkpoint sealing what a crash left unsealed): an anchor
// past it shows that the log was cut back, although Head may have
// reached the anchor's seq again. For a new log it names no record
// (Seq 0, no Link).
func (l *Log) Found() Anchor { return l.found }

// Holds reports whether the log, as Open found it, holds the checkpoint
// an anchor of it names (Config.OnCheckpoint), or its last record (Found):
// an error wrapping ErrBehindAnchor, as Open's refusal does, when it ended
// before it, or held another record at its seq. An anchor of a record
// before those Open read (from the segment of the last checkpoint on) is
// for Verify to check, and one of another log says nothing about this
// one: nil.
func (l *Log) Holds(a Anchor) error {
	f := l.found
	if a.LogID != f.LogID {
		return nil
	}
	if f.Link == "" || a.Seq > f.Seq {
		return fmt.Errorf("%w: the log ended at record %d when it was opened, before record %d, which the anchor names", ErrBehindAnchor, f.Seq, a.Seq)
	}
	if a.Seq < l.foundMin {
		return nil
	}
	held := a.Link == f.Link
	if a.Seq != f.Seq {
		link, ok := l.foundCPs[a.Seq]
		held = ok && hex.EncodeToString(link[:]) == a.Link
	}
	if !held {
		return fmt.Errorf("%w: record %d is not the one the anchor names: the log was rewritten from there on, or is an older copy written on since", ErrBehindAnchor, a.Seq)
	}
	return nil
}

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
	it, cp, js, err := l.reserve(&e)
	if err != nil {
		return 0, err
	}
	it.leads = true
	l.commit(it, cp, js)
	err = <-it.done
	for err == errLead {
		l.w.lead()
		err = <-it.done
	}
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrNotRecorded, err)
	}
	return it.seq, nil
}

// A Pending is a record Start began: its place in the log is taken, and
// Wait says when it is durable.
type Pending struct {
	seq  uint64
	done chan error
	err  error
}

// Seq returns the record's seq (0 when it was refused at once).
func (p *Pending) Seq() uint64 { return p.seq }

// Start takes the next place in the log for e and makes the record
// durable on another goroutine, as Append does, without waiting: the
// caller can prepare the action e announces meanwhile, and must not let
// it take effect before Wait returned nil. Records started or appended
// later follow it in the log. A Pending is for one goroutine.
func (l *Log) Start(e Event) *Pending {
	it, cp, js, err := l.reserve(&e)
	if err != nil {
		return &Pending{err: err}
	}
	go l.commit(it, cp, js)
	return &Pending{seq: it.seq, done: it.done}
}

// Enter takes the next place in the log for e as Start does, and writes
// the record here, as Append does, when no write is under way: it returns
// once the record is durable then. When a write is under way the record
// waits for the next, which another goroutine makes, and Enter returns at
// once: the caller prepares the action e announces meanwhile, and must not
// let it take effect before Wait returned nil. A Pending is for one
// goroutine.
func (l *Log) Enter(e Event) *Pending {
	it, cp, js, err := l.reserve(&e)
	if err != nil {
		return &Pending{err: err}
	}
	l.commit(it, cp, js)
	return &Pending{seq: it.seq, done: it.done}
}

// Wait returns once the record is durable, or why it is not recorded
// (an error that wraps ErrNotRecorded, as Append's).
func (p *Pending) Wait() error {
	if p.done != nil {
		if err := <-p.done; err != nil {
			p.err = fmt.Errorf("%w: %w", ErrNotRecorded, err)
		}
		p.done = nil
	}
	return p.err
}

// reserve encodes e and reserves its seq and key, and a checkpoint to
// follow when one is due; the caller commits them.
func (l *Log) reserve(e *Event) (*pendingEntry, *item, []byte, error) {
	if e.Type == "" {
		return nil, nil, nil, fmt.Errorf("%w: the event has no type", ErrNotRecorded)
	}
	if e.Time.IsZero() {
		e.Time = l.now()
	}
	js, err := jsonEvent(e)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%w: encode event: %w", ErrNotRecorded, err)
	}
	if len(js) > MaxEventSize {
		return nil, nil, nil, fmt.Errorf("%w: %s event is %d bytes encoded, the limit is %d: shorten its fields", ErrNotRecorded, e.Type, len(js), MaxEventSize)
	}
	l.mu.Lock()
	if l.failed != nil {
		err := l.failed
		l.mu.Unlock()
		return nil, nil, nil, fmt.Errorf("%w: %w", ErrNotRecorded, err)
	}
	if l.closed {
		l.mu.Unlock()
		return nil, nil, nil, fmt.Errorf("%w: %w", ErrNotRecorded, ErrClosed)
	}
	it, cp := l.reserveEntry(e)
	l.inflight.Add(1)
	l.mu.Unlock()
	it.done = make(chan error, 1)
	return it, cp, js, nil
}

// commit seals a reserved entry and hands it, with the checkpoint that
// follows it, to the writer; it.done gets the outcome. Seal outside the
// lock: concurrent callers encrypt in parallel and the writer puts their
// records in seq order.
func (l *Log) commit(it *pendingEntry, cp *item, js []byte) {
	it.seal(l.logID, js)
	clear(js)
	l.w.submit(it.item, cp)
	l.inflight.Done()
}

// jsonEvent encodes an event for an entry (a reader sets Seq): what
// json.Marshal writes, most often without its reflection.
func jsonEvent(e *Event) ([]byte, error) {
	e.Seq = 0
	return AppendEventJSON(nil, e)
}

// pendingEntry is an entry whose seq and key are reserved, to be sealed.
type pendingEntry struct {
	*item
	epk [32]byte
	n   uint32
	key [32]byte
}

// seal encrypts the encoded event and erases the key.
func (p *pendingEntry) seal(logID [16]byte, js []byte) {
	if p.err == nil {
		p.ct, p.err = sealEntry(logID, p.seq, js, p.epk, p.n, &p.key)
	}
	clear(p.key[:])
}

// reserveEntry hands out the next seq and the key of the entry for e, and a
// checkpoint to follow when the count policy asks for one; l.mu held.
func (l *Log) reserveEntry(e *Event) (*pendingEntry, *item) {
	p := &pendingEntry{item: &item{kind: itemEntry, seq: l.nextSeq}}
	l.nextSeq++
	if l.chain == nil || l.chain.n >= chainMax {
		if l.chain != nil {
			l.chain.erase()
		}
		l.chain = nil
		seed, err := l.seeds.take()
		if err != nil {
			p.err = err
		} else {
			l.chain = startChain(seed)
		}
	}
	if l.chain != nil {
		p.epk = l.chain.epk
		p.n, p.key = l.chain.next()
	}
	l.sinceCP++
	if l.sinceCP == 1 {
		select {
		case l.unsealed <- struct{}{}:
		default:
		}
	}
	l.iv.add(e)
	var cp *item
	if l.every > 0 && l.sinceCP >= l.every {
		cp = &item{kind: itemCheckpoint, seq: l.nextSeq, sum: l.takeSummary()}
		l.lastCP = l.nextSeq
		l.nextSeq++
		l.sinceCP = 0
	}
	return p, cp
}

// takeSummary ends the interval for a checkpoint just reserved: it returns
// the summary of its entries with the key to seal it, and makes the next
// entry start a new chain; l.mu held.
func (l *Log) takeSummary() *pendingSummary {
	p := &pendingSummary{Summary: l.iv.take()}
	if l.chain != nil {
		p.epk, p.key = l.chain.epk, l.chain.summary
		l.chain.erase()
		l.chain = nil
	}
	return p
}

// Err returns the failure that stopped the log (a write, sync or key
// update that failed, a file changed under it), or nil. A failed log
// refuses every Append and Checkpoint until it is reopened: close it and
// Open it again, which verifies what is on disk and continues it.
func (l *Log) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failed
}

// Close waits for appends in flight, writes a final checkpoint when entries
// are unsealed, erases the signing key and the entry keys from memory and
// releases the files and the lock. It returns the log's failure, if it had
// one.
func (l *Log) Close() error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closed = true
		l.mu.Unlock()
		l.inflight.Wait()
		close(l.quit)
		if l.tickDone != nil {
			<-l.tickDone
		}
		done := make(chan error, 1)
		l.w.requestCheckpoint(done) // the final one, when entries are unsealed
		<-done
		err := l.w.failure()
		l.w.keys.erase()
		l.seeds.close()
		l.mu.Lock()
		if l.chain != nil {
			l.chain.erase()
			l.chain = nil
		}
		l.mu.Unlock()
		if cerr := l.w.closeFiles(); cerr != nil && err == nil {
			err = fmt.Errorf("audit log %s: close: %w", l.path, cerr)
		}
		l.closeErr = err
	})
	return l.closeErr
}

func clampUint32(n int) uint32 {
	if n <= 0 {
		return 0
	}
	if uint64(n) > math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(n)
}
