package audit

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/postern/postern/internal/atomicfile"
)

// Open opens the log at cfg.Path for appending, creating it when it does not
// exist or is empty. It holds an exclusive lock on the file until Close; a
// second writer gets ErrLocked.
//
// An existing log is verified first. A torn last record (a crash in the
// middle of a write) is copied to a side file next to the log, cut away, and
// an EventLogRecovered entry says so. Damage anywhere else makes Open fail
// with ErrDamaged and change nothing: the caller decides whether to move the
// log aside. Open also checks that the log belongs to cfg's keys and that the
// key file continues its key chain, and writes a checkpoint when entries are
// unsealed or the checkpoint policy changed.
func Open(cfg Config) (*Log, error) {
	if cfg.Path == "" || cfg.KeyFile == "" {
		return nil, errors.New("open audit log: the configuration needs Path and KeyFile")
	}
	if len(cfg.PK0) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("open audit log %s: PK0 is %d bytes, want %d", cfg.Path, len(cfg.PK0), ed25519.PublicKeySize)
	}
	if cfg.Recipient == ([32]byte{}) {
		return nil, fmt.Errorf("open audit log %s: the configuration has no recipient", cfg.Path)
	}
	l := &Log{
		path:         cfg.Path,
		recipient:    cfg.Recipient,
		now:          cfg.Now,
		every:        cfg.CheckpointEvery,
		interval:     cfg.CheckpointInterval,
		onCheckpoint: cfg.OnCheckpoint,
		in:           make(chan *item, 4096),
		quit:         make(chan struct{}),
	}
	if l.now == nil {
		l.now = time.Now
	}
	switch {
	case l.every == 0:
		l.every = DefaultCheckpointEvery
	case l.every < 0:
		l.every = 0
	}
	switch {
	case l.interval == 0:
		l.interval = DefaultCheckpointInterval
	case l.interval < 0:
		l.interval = 0
	}

	// Without the signing key nothing can be sealed: check it before
	// touching the log.
	keys, err := readKeyFile(cfg.KeyFile)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(cfg.Path, openFlags, 0o600)
	if err != nil {
		keys.erase()
		return nil, fmt.Errorf("open audit log: %w", err)
	}
	w, err := openWriter(l, f, cfg, keys)
	if err != nil {
		keys.erase()
		f.Close()
		return nil, err
	}
	l.w = w
	go l.run()
	return l, nil
}

func openWriter(l *Log, f *os.File, cfg Config, keys *keyState) (*writer, error) {
	path := cfg.Path
	held, err := lockFile(f)
	if held {
		return nil, fmt.Errorf("%w: %s is locked by another process; stop the other gateway (or wait for it to exit) before opening it", ErrLocked, path)
	}
	if err != nil {
		return nil, fmt.Errorf("lock audit log %s: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("open audit log: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("open audit log: %s is not a regular file", path)
	}
	w := &writer{
		l:           l,
		f:           f,
		path:        path,
		keyFile:     cfg.KeyFile,
		now:         l.now,
		maxUnsealed: clampUint32(l.every),
		lk:          newLinker(),
		pending:     map[uint64]*item{},
		cpWaiters:   map[uint64][]chan error{},
	}
	w.dev, w.ino, _ = fileID(fi)

	// Verify what is there.
	var sc *scanner
	size := fi.Size()
	if size > 0 {
		sc, err = newScanner(VerifyOptions{PK0: cfg.PK0})
		if err != nil {
			return nil, err
		}
		if err := sc.run(io.NewSectionReader(f, 0, size)); err != nil {
			return nil, fmt.Errorf("open audit log: %w", err)
		}
		onlyTorn := sc.fail != nil && sc.fail.Kind == FindingNoHeader && sc.next == 0 && sc.torn != nil
		if sc.fail != nil && !onlyTorn {
			return nil, fmt.Errorf("%w: %s: record seq %d at offset %d: %s; nothing was changed: run verify on it, then move it aside to start a new log",
				ErrDamaged, path, sc.fail.Seq, sc.fail.Offset, sc.fail.Message)
		}
		if sc.haveHdr && sc.hdr.recipient != cfg.Recipient {
			return nil, fmt.Errorf("open audit log %s: its entries are sealed to %s, the configuration names %s: this log belongs to another setup",
				path, FormatRecipient(sc.hdr.recipient), FormatRecipient(cfg.Recipient))
		}
	}
	fresh := sc == nil || !sc.haveHdr

	// Match the key file with the log before changing anything.
	wantEpoch, wantKey := uint64(0), [32]byte(cfg.PK0)
	if !fresh {
		wantEpoch, wantKey = sc.epoch, sc.key
	}
	advance, err := keys.reconcile(cfg.KeyFile, wantEpoch, wantKey)
	if err != nil {
		return nil, err
	}
	w.keys = keys
	fail := func(err error) (*writer, error) {
		w.keys.erase()
		return nil, err
	}

	// Cut a torn tail away, keeping a copy.
	var recovered *Event
	if sc != nil && sc.torn != nil {
		saved, err := saveTorn(f, path, sc.torn.Offset, size)
		if err != nil {
			return fail(err)
		}
		if err := f.Truncate(sc.torn.Offset); err != nil {
			return fail(fmt.Errorf("open audit log %s: cut the torn tail at offset %d: %w", path, sc.torn.Offset, err))
		}
		if err := f.Sync(); err != nil {
			return fail(fmt.Errorf("open audit log %s: sync after cutting the torn tail: %w", path, err))
		}
		recovered = &Event{Type: EventLogRecovered, Time: l.now(), Detail: map[string]string{
			"offset":   strconv.FormatInt(sc.torn.Offset, 10),
			"bytes":    strconv.FormatInt(sc.torn.Bytes, 10),
			"saved_to": saved,
			"reason":   sc.torn.Reason,
		}}
	}
	if advance {
		// A checkpoint was appended but the key file did not move on.
		w.keys = w.keys.advance()
		if err := writeKeyFile(cfg.KeyFile, w.keys); err != nil {
			return fail(err)
		}
	}

	if fresh {
		if _, err := rand.Read(w.logID[:]); err != nil {
			return fail(err)
		}
		created := l.now().UnixNano()
		h := header{logID: w.logID, created: created, pk0: [32]byte(cfg.PK0), recipient: cfg.Recipient}
		w.buf, w.head = w.lk.appendFrame(w.buf, recHeader, 0, w.head, h.marshal())
		w.seq = 1
		w.lastTime = created
		if err := dirSyncAfterCreate(path); err != nil {
			return fail(err)
		}
	} else {
		w.logID = sc.hdr.logID
		w.off = sc.end
		w.seq = sc.next
		w.head = sc.head
		w.lastTime = sc.lastTime
		w.unsealed = int(sc.sinceCP)
	}
	// Seal the header of a new log, entries a crash left unsealed, and a
	// change of the unsealed limit.
	needCP := fresh || sc.lastCP == nil || sc.sinceCP > 0 || sc.lastCP.MaxUnsealed != w.maxUnsealed
	if needCP {
		w.addCheckpoint()
		if err := w.flush(); err != nil {
			return fail(err)
		}
		if err := w.rotate(); err != nil {
			return fail(err)
		}
		w.notifyCheckpoint(w.seq-1, w.head)
	}
	l.logID = w.logID
	l.lastCP = w.seq - 1
	if !needCP {
		l.lastCP = sc.lastCP.Seq
	}
	if recovered != nil {
		js, err := json.Marshal(recovered)
		if err != nil {
			return fail(err)
		}
		ct, err := sealEntry(w.logID, w.seq, js, &l.recipient)
		if err != nil {
			return fail(err)
		}
		w.addEntry(ct)
		if err := w.flush(); err != nil {
			return fail(err)
		}
	}
	l.nextSeq = w.seq
	l.sinceCP = w.unsealed
	w.publishHead()
	return w, nil
}

// saveTorn copies the bytes from off to size into a new file next to the log
// and returns its name.
func saveTorn(f *os.File, path string, off, size int64) (string, error) {
	name := path + ".torn-" + strconv.FormatInt(off, 10)
	var side *os.File
	var err error
	for i := 0; i < 100; i++ {
		n := name
		if i > 0 {
			n = name + "-" + strconv.Itoa(i)
		}
		side, err = os.OpenFile(n, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			name = n
			break
		}
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return "", fmt.Errorf("open audit log %s: save the torn tail before cutting it: %w", path, err)
	}
	_, err = io.Copy(side, io.NewSectionReader(f, off, size-off))
	if err == nil {
		err = side.Sync()
	}
	if cerr := side.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = atomicfile.SyncDir(filepath.Dir(path))
	}
	if err != nil {
		os.Remove(name)
		return "", fmt.Errorf("open audit log %s: save the torn tail to %s: %w", path, name, err)
	}
	return name, nil
}

func dirSyncAfterCreate(path string) error {
	if err := atomicfile.SyncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("open audit log %s: sync its directory: %w", path, err)
	}
	return nil
}
