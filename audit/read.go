package audit

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// DecodeEvents verifies the log read from r as Verify does and, with the
// recipient's identity, decrypts each entry that verified and passes it to
// fn in order. r holds the log's first (or only) file; ReadLog reads every
// segment. Checkpoints are passed as events of type EventCheckpoint (Detail
// holds epoch and max_unsealed). Each entry must carry this log's id and its
// own seq inside the ciphertext, so an entry moved from another position or
// another log is an error. Entries after the report's last checkpoint are
// not sealed.
//
// The error is non-nil when r cannot be read, when an entry does not decrypt
// or does not belong where it is, or when fn fails; what Verify would report
// is in the Report.
func DecodeEvents(r io.Reader, identity [32]byte, opts VerifyOptions, fn func(Event) error) (*Report, error) {
	return decodeSegments([]segRef{{r: r}}, identity, opts, sink{event: fn})
}

// ReadOptions choose what ReadLog decrypts.
type ReadOptions struct {
	VerifyOptions
	// Since skips the stretches between checkpoints whose events all
	// happened before it, without decrypting them (events before it may
	// still be passed: the caller filters them).
	Since time.Time
	// Run keeps only the stretches whose checkpoint summary names this run
	// (and the unsealed entries after the last checkpoint), without
	// decrypting the others.
	Run string
}

func (o *ReadOptions) seeks() bool { return !o.Since.IsZero() || o.Run != "" }

// ReadLog verifies the log at path, every segment of it, and passes its
// events to fn in order, as DecodeEvents does, in memory that does not grow
// with the log. With Since or Run set it reads the log twice: once to
// verify it and to decrypt the checkpoint summaries, and once to decrypt
// only the stretches the summaries point to.
func ReadLog(path string, identity [32]byte, opts ReadOptions, fn func(Event) error) (*Report, error) {
	return readLog(path, identity, opts, sink{event: fn})
}

// ReadLogJSON reads the log as ReadLog does and passes fn the JSON of each
// event, as AppendEventJSON writes it (seq included); js is fn's only
// until it returns. An event that was stored as the writer stores it
// (storedEventJSON) is passed as it decrypted, its seq added, without
// being decoded and encoded again; any other is decoded (an entry that
// does not decode is an error, as for ReadLog) and encoded.
func ReadLogJSON(path string, identity [32]byte, opts ReadOptions, fn func(js []byte) error) (*Report, error) {
	return readLog(path, identity, opts, sink{json: fn})
}

func readLog(path string, identity [32]byte, opts ReadOptions, out sink) (*Report, error) {
	segs, err := readSegments(path, 0)
	if err != nil {
		return nil, err
	}
	if !opts.seeks() {
		return decodeSegments(segs, identity, opts.VerifyOptions, out)
	}
	return readSeeking(segs, identity, opts, out)
}

// sink is where a read passes its events, in log order: decoded (event),
// or as their JSON (json).
type sink struct {
	event func(Event) error
	json  func(js []byte) error
}

// pass hands e on, encoded in *buf when the sink takes JSON.
func (s sink) pass(e *Event, buf *[]byte) error {
	if s.json == nil {
		return s.event(*e)
	}
	var err error
	if *buf, err = AppendEventJSON((*buf)[:0], e); err != nil {
		return err
	}
	return s.json(*buf)
}

// ReadEvents decrypts every entry of the log at path with the recipient's
// identity and returns the events, checkpoints included (see DecodeEvents).
// When the log fails verification it returns the events before the first
// bad record together with the report's error.
func ReadEvents(path string, identity [32]byte) ([]Event, error) {
	var evs []Event
	rep, err := ReadLog(path, identity, ReadOptions{}, func(e Event) error {
		evs = append(evs, e)
		return nil
	})
	if err != nil {
		return evs, err
	}
	return evs, rep.Err()
}

// decoder turns verified records into events.
type decoder struct {
	op    *opener
	logID [16]byte
	out   sink
	buf   []byte // an event's JSON, for a sink that takes JSON
}

func newDecoder(identity [32]byte, out sink) (*decoder, error) {
	op, err := newOpener(identity)
	if err != nil {
		return nil, err
	}
	return &decoder{op: op, out: out}, nil
}

func (d *decoder) header(h *header) error {
	if h.recipient != d.op.pub {
		return fmt.Errorf("this identity does not open the log: its entries are sealed to %s, the identity belongs to %s",
			FormatRecipient(h.recipient), FormatRecipient(d.op.pub))
	}
	d.logID = h.logID
	return nil
}

// entryOpened, when set, is called for each entry decrypted (tests count
// what a seeking read decrypts). It may be called from several goroutines.
var entryOpened func()

// open decrypts the entry at seq and returns its event's stored JSON.
func (d *decoder) open(version byte, seq uint64, ct []byte) ([]byte, error) {
	if entryOpened != nil {
		entryOpened()
	}
	js, err := d.op.open(version, d.logID, seq, ct)
	if err != nil {
		return nil, fmt.Errorf("audit entry seq %d: %w", seq, err)
	}
	return js, nil
}

// event decrypts and decodes the entry at seq.
func (d *decoder) event(version byte, seq uint64, ct []byte) (Event, error) {
	js, err := d.open(version, seq, ct)
	if err != nil {
		return Event{}, err
	}
	var e Event
	if err := decodeEvent(js, &e); err != nil {
		return Event{}, fmt.Errorf("audit entry seq %d: decode event: %w", seq, err)
	}
	e.Seq = seq
	return e, nil
}

// eventJSON decrypts the entry at seq and appends its event's JSON, as
// AppendEventJSON writes it, to dst: the stored JSON, seq added, when the
// writer stored it so (storedEventJSON); else the event decoded (an error
// as for event) and encoded. On an error dst is returned as it was.
func (d *decoder) eventJSON(dst []byte, version byte, seq uint64, ct []byte) ([]byte, error) {
	js, err := d.open(version, seq, ct)
	if err != nil {
		return dst, err
	}
	if storedEventJSON(js) {
		return appendEventJSONAt(dst, seq, js), nil
	}
	var e Event
	if err := decodeEvent(js, &e); err != nil {
		return dst, fmt.Errorf("audit entry seq %d: decode event: %w", seq, err)
	}
	e.Seq = seq
	return AppendEventJSON(dst, &e)
}

func (d *decoder) entry(version byte, seq uint64, ct []byte) error {
	if d.out.json != nil {
		var err error
		if d.buf, err = d.eventJSON(d.buf[:0], version, seq, ct); err != nil {
			return err
		}
		return d.out.json(d.buf)
	}
	e, err := d.event(version, seq, ct)
	if err != nil {
		return err
	}
	return d.out.event(e)
}

func (d *decoder) checkpoint(seq uint64, c *checkpoint) error {
	e := checkpointEvent(seq, c)
	return d.out.pass(&e, &d.buf)
}

// checkpointEvent is how readers see a checkpoint.
func checkpointEvent(seq uint64, c *checkpoint) Event {
	return Event{Seq: seq, Type: EventCheckpoint, Time: unixNano(c.time), Detail: map[string]string{
		"epoch":        strconv.FormatUint(c.epoch, 10),
		"max_unsealed": strconv.FormatUint(uint64(c.maxUnsealed), 10),
	}}
}

// decodeSegments verifies the segments and passes their events to fn in
// order. The scanner verifies in a goroutine of its own, entries are
// decrypted and decoded in batches by a pool of workers (see readPipeline),
// and fn is called here, in log order.
func decodeSegments(segs []segRef, identity [32]byte, opts VerifyOptions, out sink) (*Report, error) {
	d, err := newDecoder(identity, out)
	if err != nil {
		return nil, err
	}
	defer d.op.erase()
	sc, err := newScanner(opts)
	if err != nil {
		return nil, err
	}
	pl := newReadPipeline(identity, readWorkers(), out.json != nil)
	sc.onHeader = d.header
	sc.onEntry = func(seq uint64, ct []byte) error { return pl.entry(d.logID, sc.recVersion, seq, ct) }
	sc.onCheckpoint = func(seq uint64, c *checkpoint) error { return pl.event(checkpointEvent(seq, c)) }
	var scanErr error
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		scanErr = sc.runSegments(segs)
		pl.finish()
	}()
	err = pl.deliver(out)
	<-scanned
	if err == nil && !errors.Is(scanErr, errReadStopped) {
		err = scanErr
	}
	return sc.report(), err
}

// stretch is a run of records to decrypt: from the record after a
// checkpoint (or the header) to the checkpoint that seals them, or to the
// end of the log.
type stretch struct {
	seg      int      // index into the segment list
	off      int64    // where its first record starts
	seq      uint64   // its first record
	prev     [32]byte // the link before it
	last     uint64   // its last record (a checkpoint), or none: to the end
	lastLink [32]byte
	toEnd    bool
}

// readSeeking is ReadLog with Since or Run: a verifying pass that decrypts
// only checkpoint summaries, then a pass over the stretches they select.
func readSeeking(segs []segRef, identity [32]byte, opts ReadOptions, to sink) (*Report, error) {
	d, err := newDecoder(identity, to)
	if err != nil {
		return nil, err
	}
	defer d.op.erase()
	sc, err := newScanner(opts.VerifyOptions)
	if err != nil {
		return nil, err
	}
	var out []stretch
	// cur is the stretch being scanned: it starts after each checkpoint.
	cur := stretch{}
	started := false
	segIndex := func() int {
		for k := range segs {
			if &segs[k] == sc.seg {
				return k
			}
		}
		return 0
	}
	sc.onHeader = d.header
	sc.onFrame = func(f *frame) error {
		if !started {
			cur = stretch{seg: segIndex(), off: f.off, seq: f.seq, prev: f.prev}
			started = true
		}
		if f.typ != recCheckpoint {
			return nil
		}
		c, _ := parseCheckpoint(sc.recVersion, f.payload) // verified already
		want := f.seq > cur.seq                           // it seals entries
		if want && c.version == version2 {
			s, err := openSummary(&d.op.chains, d.logID, f.seq, c.summary)
			if err != nil {
				return err
			}
			want = s.Entries > 0 && (opts.Run == "" || s.Mentions(opts.Run)) &&
				(opts.Since.IsZero() || s.All || !s.Last.Before(opts.Since))
		} else if want && !opts.Since.IsZero() {
			want = !unixNano(c.time).Before(opts.Since)
		}
		if want {
			cur.last, cur.lastLink = f.seq, f.link
			if n := len(out); n > 0 && out[n-1].last+1 == cur.seq {
				out[n-1].last, out[n-1].lastLink = cur.last, cur.lastLink
			} else {
				out = append(out, cur)
			}
		}
		started = false
		return nil
	}
	if err := sc.runSegments(segs); err != nil {
		return sc.report(), err
	}
	rep := sc.report()
	if started {
		// The unsealed entries after the last checkpoint.
		cur.toEnd, cur.last = true, sc.next-1
		if n := len(out); n > 0 && out[n-1].last+1 == cur.seq {
			out[n-1].toEnd, out[n-1].last = true, cur.last
		} else {
			out = append(out, cur)
		}
	}
	hdr := sc.hdr
	for _, st := range out {
		if err := decodeStretch(segs, hdr, st, d); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// decodeStretch reads the records of one stretch again, checks that they
// are the ones the first pass verified (each link, the chain from the
// record before, the last link), and decrypts them.
func decodeStretch(segs []segRef, hdr header, st stretch, d *decoder) error {
	fr := newFrameReader(nil)
	head, seq := st.prev, st.seq
	off := st.off
	for k := st.seg; k < len(segs) && seq <= st.last; k++ {
		seg := &segs[k]
		rc, err := seg.openAt(off)
		if err != nil {
			return fmt.Errorf("read audit log: %w", err)
		}
		version := version2
		if seg.index == 0 {
			version = hdr.version
		}
		fr.reset(rc, off, seg.index > 0 || version == version2)
		off = 0
		for seq <= st.last {
			f, err := fr.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				rc.Close()
				return fmt.Errorf("audit log changed while it was read: record seq %d: %w", seq, err)
			}
			if f.seq != seq || f.prev != head {
				rc.Close()
				return fmt.Errorf("audit log changed while it was read: record seq %d no longer follows the record before it", seq)
			}
			switch f.typ {
			case recEntry:
				err = d.entry(version, f.seq, f.payload)
			case recCheckpoint:
				var c checkpoint
				if c, err = parseCheckpoint(version, f.payload); err == nil {
					err = d.checkpoint(f.seq, &c)
				}
			}
			if err != nil {
				rc.Close()
				return err
			}
			head = f.link
			seq++
		}
		rc.Close()
	}
	if seq <= st.last || (!st.toEnd && head != st.lastLink) {
		return errors.New("audit log changed while it was read: a stretch ends elsewhere than the first pass found")
	}
	return nil
}
