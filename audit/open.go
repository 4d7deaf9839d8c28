package audit

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Open opens the log at cfg.Path for appending, creating it when it does not
// exist or is empty. It holds an exclusive lock on the file until Close; a
// second writer gets ErrLocked.
//
// An existing log is verified from its last checkpoint on: the segment
// holding that checkpoint and every one after it (full verification, back
// to the header, is Verify's, offline). A torn last write (a crash in the
// middle of a write) is copied to a side file next to the log, cleared, and
// an EventLogRecovered entry says so. Damage anywhere else makes Open fail
// with ErrDamaged and change nothing: the caller decides whether to move the
// log aside. Open also checks that the log belongs to cfg's keys, that the
// last checkpoint commits to the key in the key file, and writes a
// checkpoint when entries are unsealed or the checkpoint policy changed. A
// version 1 log is continued in version 2 segments after its file.
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
	first := cfg.SegmentSize
	switch {
	case first == 0:
		first = DefaultSegmentSize
	case first < minSegmentSize:
		return nil, fmt.Errorf("open audit log %s: segment size %d is below the least, %d", cfg.Path, first, minSegmentSize)
	}
	l := &Log{
		path:         cfg.Path,
		recipient:    cfg.Recipient,
		now:          cfg.Now,
		every:        cfg.CheckpointEvery,
		interval:     cfg.CheckpointInterval,
		onCheckpoint: cfg.OnCheckpoint,
		unsealed:     make(chan struct{}, 1),
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
	f, err := os.OpenFile(cfg.Path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		keys.erase()
		return nil, fmt.Errorf("open audit log: %w", err)
	}
	l.seeds = newSeedPool(cfg.Recipient)
	w, err := openWriter(l, f, cfg, keys, first)
	if err != nil {
		keys.erase()
		l.seeds.close()
		f.Close()
		return nil, err
	}
	l.w = w
	if l.interval > 0 {
		l.tickDone = make(chan struct{})
		go l.tick()
		if w.unsealed > 0 {
			select {
			case l.unsealed <- struct{}{}:
			default:
			}
		}
	}
	return l, nil
}

// found is what Open learned from the log on disk.
type found struct {
	sc         *scanner
	fresh      bool  // no header yet: a new log
	tornHeader *Torn // the start of a header a crash cut short
	last       int   // index of the last segment in use
	size0      int64
	min        uint64              // the first record sc read
	cps        map[uint64][32]byte // the links of the checkpoints sc read
}

func openWriter(l *Log, f *os.File, cfg Config, keys *keyState, first int64) (*writer, error) {
	path := cfg.Path
	held, err := lockFile(f)
	if held {
		return nil, fmt.Errorf("%w: %s is locked by another process; stop the other gateway (or wait for it to exit) before opening it", ErrLocked, path)
	}
	if err != nil {
		return nil, fmt.Errorf("lock audit log %s: %w", path, err)
	}
	w := &writer{
		l:           l,
		lock:        f,
		path:        path,
		keyFile:     cfg.KeyFile,
		now:         l.now,
		first:       first,
		maxUnsealed: clampUint32(l.every),
		lk:          newLinker(),
		pending:     map[uint64]*item{},
		cpWaiters:   map[uint64][]chan error{},
	}
	fd, err := scanForOpen(f, cfg)
	if err != nil {
		return nil, err
	}
	sc := fd.sc

	// Match the key file with the log before changing anything.
	wantEpoch, wantKey := uint64(0), [32]byte(cfg.PK0)
	if !fd.fresh {
		wantEpoch, wantKey = sc.epoch, sc.key
	}
	advance, err := keys.reconcile(cfg.KeyFile, wantEpoch, wantKey)
	if err != nil {
		return nil, err
	}
	w.keys = keys
	fail := func(err error) (*writer, error) {
		w.keys.erase()
		if w.seg != nil && w.seg.f != f {
			w.seg.f.Close()
		}
		return nil, err
	}

	// Clear a torn write away, keeping a copy.
	var recovered *Event
	if sc != nil && sc.torn != nil {
		if recovered, err = clearTorn(f, path, sc); err != nil {
			return fail(err)
		}
		recovered.Time = l.now()
	}
	if advance {
		// A checkpoint was appended but the key file did not move on.
		w.keys = w.keys.advance()
		if err := writeKeyFile(cfg.KeyFile, w.keys); err != nil {
			return fail(err)
		}
	}

	if fd.fresh {
		if t := fd.tornHeader; t != nil {
			saved, err := saveTorn(f, path, 0, t.Bytes)
			if err != nil {
				return fail(err)
			}
			recovered = &Event{Type: EventLogRecovered, Time: l.now(), Detail: map[string]string{
				"file": filepath.Base(path), "offset": "0", "bytes": strconv.FormatInt(t.Bytes, 10),
				"saved_to": saved, "reason": t.Reason,
			}}
		}
		if _, err := rand.Read(w.logID[:]); err != nil {
			return fail(err)
		}
		// The file holds zeros, and perhaps the start of a header, saved
		// above: it becomes the first segment, at the size a new log's
		// file gets. A larger file is cut first; filling it (a file of
		// terabytes that holds next to nothing on disk, put there by
		// anyone with the person's uid) could take the disk.
		if fd.size0 > first {
			if err := f.Truncate(first); err != nil {
				return fail(fmt.Errorf("open audit log %s: %w", path, err))
			}
		}
		if err := fillSegment(f, first); err != nil {
			return fail(fmt.Errorf("open audit log %s: %w", path, err))
		}
		w.seg = &segment{index: 0, path: path, f: f, size: first, prealloc: true}
		fi, err := f.Stat()
		if err != nil {
			return fail(err)
		}
		w.seg.dev, w.seg.ino, _ = fileID(fi)
		created := l.now().UnixNano()
		h := header{version: currentVersion, logID: w.logID, created: created, pk0: [32]byte(cfg.PK0), recipient: cfg.Recipient}
		w.buf, w.head = w.lk.appendFrame(w.buf, recHeader, 0, w.head, h.marshal())
		w.seq = 1
		w.lastTime = created
		l.found = Anchor{LogID: hex.EncodeToString(w.logID[:])}
	} else {
		w.logID = sc.hdr.logID
		l.found = Anchor{LogID: hex.EncodeToString(w.logID[:]), Seq: sc.next - 1, Link: hex.EncodeToString(sc.head[:])}
		l.foundMin, l.foundCPs = fd.min, fd.cps
		w.seq = sc.next
		w.head = sc.head
		w.lastTime = sc.lastTime
		w.unsealed = int(sc.sinceCP)
		if fd.last == 0 {
			fi, err := f.Stat()
			if err != nil {
				return fail(err)
			}
			w.seg = &segment{index: 0, path: path, f: f, size: fi.Size(), off: sc.end, last: sc.head, prealloc: sc.hdr.version == version2}
			w.seg.dev, w.seg.ino, _ = fileID(fi)
		} else if w.seg, err = openSegment(path, fd.last, sc.end, sc.head, true); err != nil {
			return fail(err)
		}
	}
	l.logID = w.logID

	// Seal the header of a new log, entries a crash left unsealed, and a
	// change of the unsealed limit.
	needCP := fd.fresh || sc.lastCP == nil || sc.sinceCP > 0 || sc.lastCP.MaxUnsealed != w.maxUnsealed
	if needCP {
		var sum *pendingSummary
		if !fd.fresh && sc.sinceCP > 0 {
			// Entries a crashed writer left: their contents are unknown here.
			seed, err := l.seeds.take()
			if err != nil {
				return fail(err)
			}
			c := startChain(seed)
			sum = &pendingSummary{Summary: Summary{Entries: int(sc.sinceCP), All: true}, epk: c.epk, key: c.summary}
			c.erase()
		}
		if err := w.addCheckpoint(sum); err != nil {
			return fail(err)
		}
		if err := w.flush(); err != nil {
			return fail(err)
		}
		if err := w.rotate(); err != nil {
			return fail(err)
		}
		w.notifyCheckpoint(w.seq-1, w.head)
	}
	l.nextSeq = w.seq
	l.lastCP = w.seq - 1
	if !needCP {
		l.lastCP = sc.lastCP.Seq
	}
	l.sinceCP = w.unsealed
	if recovered != nil {
		it, cp := l.reserveEntry(recovered)
		js, err := jsonEvent(recovered)
		if err != nil {
			return fail(err)
		}
		it.seal(w.logID, js)
		w.submit(it.item, cp)
		if err := w.failure(); err != nil {
			return fail(err)
		}
	}
	w.durable = w.seq
	w.publishHead()
	return w, nil
}

// scanForOpen reads what Open needs: the header, and the records from the
// segment that holds the last checkpoint to the end.
func scanForOpen(f *os.File, cfg Config) (*found, error) {
	path := cfg.Path
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("open audit log: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("open audit log: %s is not a regular file", path)
	}
	fd := &found{size0: fi.Size()}
	idx, err := segmentIndexes(path)
	if err != nil {
		return nil, fmt.Errorf("open audit log: %w", err)
	}
	if _, err := logSegments(path, 0); err != nil {
		return nil, fmt.Errorf("%w: %w; nothing was changed", ErrDamaged, err)
	}
	damaged := func(sc *scanner) error {
		why := ErrDamaged
		if k := sc.fail.Kind; k == FindingTruncated || k == FindingAnchorMismatch {
			why = fmt.Errorf("%w: %w", ErrDamaged, ErrBehindAnchor)
		}
		return fmt.Errorf("%w: %s: record seq %d at %s: %s; nothing was changed: run verify on it, then move it aside to start a new log",
			why, path, sc.fail.Seq, sc.fail.Where(), sc.fail.Message)
	}
	opts := VerifyOptions{PK0: cfg.PK0}

	// The header, from the first file.
	hs, err := newScanner(opts)
	if err != nil {
		return nil, err
	}
	stop := errors.New("stop")
	hs.onHeader = func(*header) error { return stop }
	if err := hs.run(io.NewSectionReader(f, 0, fd.size0)); err != nil && err != stop {
		return nil, fmt.Errorf("open audit log %s: %w", path, err)
	}
	if !hs.haveHdr {
		// Nothing, zeros, or a header a crash cut short: a new log, unless
		// records follow in other segments.
		empty := hs.fail != nil && hs.fail.Kind == FindingNoHeader && (hs.torn != nil || fd.size0 == 0)
		if !empty || len(idx) > 0 {
			if hs.fail == nil {
				hs.fail = &Finding{Kind: FindingNoHeader, Message: "no header"}
			}
			return nil, damaged(hs)
		}
		if hs.torn != nil && hs.torn.Bytes > 0 {
			b := make([]byte, min(hs.torn.Bytes, maxFrame))
			n, _ := f.ReadAt(b, 0)
			if !allZero(b[:n]) {
				fd.tornHeader = hs.torn
			}
		}
		fd.fresh = true
		return fd, nil
	}
	id := hex.EncodeToString(hs.hdr.logID[:])
	for _, a := range cfg.Anchors {
		if a.LogID == id {
			opts.Anchors = append(opts.Anchors, a)
		}
	}
	if hs.hdr.recipient != cfg.Recipient {
		return nil, fmt.Errorf("open audit log %s: its entries are sealed to %s, the configuration names %s: this log belongs to another setup",
			path, FormatRecipient(hs.hdr.recipient), FormatRecipient(cfg.Recipient))
	}
	if fd.last, err = removeSpares(path, idx); err != nil {
		return nil, err
	}
	// Scan from the last segment in use back until a checkpoint is met.
	for start := fd.last; ; start-- {
		sc, err := newScanner(opts)
		if err != nil {
			return nil, err
		}
		segs, err := logSegments(path, start)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrDamaged, err)
		}
		fd.min, fd.cps = 0, map[uint64][32]byte{}
		first := true
		sc.onFrame = func(f *frame) error {
			if first {
				fd.min, first = f.seq, false
			}
			if f.typ == recCheckpoint {
				fd.cps[f.seq] = f.link
			}
			return nil
		}
		segs = segs[:min(len(segs), fd.last-start+1)]
		if start == 0 {
			segs[0].path, segs[0].r = "", io.NewSectionReader(f, 0, fd.size0)
		} else {
			ok, err := resumeAt(sc, &segs[0], hs.hdr)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue // no intact record at its start: a torn first write
			}
		}
		if err := sc.runSegments(segs); err != nil {
			return nil, fmt.Errorf("open audit log: %w", err)
		}
		if sc.fail != nil {
			return nil, damaged(sc)
		}
		if sc.lastCP == nil && start > 0 {
			continue
		}
		fd.sc = sc
		return fd, nil
	}
}

// resumeAt prepares sc to scan from segment seg, in the middle of the
// chain: its first record gives the seq and the head to continue from.
func resumeAt(sc *scanner, seg *segRef, hdr header) (bool, error) {
	rc, err := seg.open()
	if err != nil {
		return false, fmt.Errorf("open audit log: %w", err)
	}
	defer rc.Close()
	fr := newFrameReader(rc)
	fr.prealloc = true
	fm, err := fr.next()
	if err != nil {
		var t *tail
		if errors.As(err, &t) || err == io.EOF {
			return false, nil
		}
		return false, fmt.Errorf("open audit log: %w", err)
	}
	sc.hdr, sc.haveHdr, sc.resumed = hdr, true, true
	sc.next, sc.head = fm.seq, fm.prev
	return true, nil
}
