package audit

import (
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"
)

// The scanner walks a log's segments record by record and checks each one
// against the state the records before it left: the checks of Verify, and
// the state a writer needs to continue the log.

// scanner walks a log and keeps the state a writer needs to continue it.
type scanner struct {
	pin       *[32]byte
	pinBeside bool                  // the pin was read beside the log
	anchors   map[uint64][][32]byte // every anchor given, by the record it names
	anchorN   []Anchor
	besideN   int // how many of anchorN were read beside the log

	// Callbacks for records that verified.
	onHeader     func(h *header) error
	onEntry      func(seq uint64, ct []byte) error
	onCheckpoint func(seq uint64, c *checkpoint) error
	// onFrame, if set, is called for every record that verified, with
	// where it is.
	onFrame func(f *frame) error

	// Where the scan is: the segment being read and the version of its
	// records (a version 1 log's later segments are version 2).
	seg        *segRef
	recVersion byte
	segments   int   // segments that held records
	bytes      int64 // record bytes in the segments before the current one

	// resumed: the scan began at a later segment (Open's fast path), so the
	// first checkpoint met cannot be checked against the key before it.
	resumed bool

	end      int64 // offset after the last good record, in the current segment
	next     uint64
	head     [32]byte
	hdr      header
	haveHdr  bool
	entries  uint64
	cps      uint64
	epoch    uint64   // epoch of the next checkpoint
	key      [32]byte // key that must sign it
	haveKey  bool
	lastCP   *CheckpointInfo
	sinceCP  uint64 // entries after the last checkpoint
	lastTime int64
	torn     *Torn
	tornSeg  *segRef
	fail     *Finding
	failTail bool // fail is damage where a segment's records end
}

func newScanner(opts VerifyOptions) (*scanner, error) {
	sc := &scanner{}
	if opts.PK0 != nil {
		if len(opts.PK0) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("pinned pk0 is %d bytes, want %d", len(opts.PK0), ed25519.PublicKeySize)
		}
		var p [32]byte
		copy(p[:], opts.PK0)
		sc.pin = &p
		sc.pinBeside = opts.PK0Beside
	}
	sc.besideN = len(opts.AnchorsBeside)
	for _, a := range slices.Concat(opts.AnchorsBeside, opts.Anchors) {
		l, err := hex.DecodeString(a.Link)
		if err != nil || len(l) != 32 {
			return nil, fmt.Errorf("anchor for seq %d has a malformed link %q", a.Seq, a.Link)
		}
		if sc.anchors == nil {
			sc.anchors = map[uint64][][32]byte{}
		}
		// Each anchor counts, though another names the same record (an
		// audit.anchor beside the log, written by whoever rewrote it).
		sc.anchors[a.Seq] = append(sc.anchors[a.Seq], [32]byte(l))
		sc.anchorN = append(sc.anchorN, a)
	}
	return sc, nil
}

func (sc *scanner) failAt(f *frame, kind FindingKind, format string, args ...any) {
	off := sc.end
	if f != nil {
		off = f.off
	}
	sc.fail = &Finding{Seq: sc.next, File: sc.segName(), Offset: off, Kind: kind, Message: fmt.Sprintf(format, args...)}
}

func (sc *scanner) segName() string {
	if sc.seg == nil {
		return ""
	}
	return sc.seg.name
}

// run scans a single stream, the log's first file.
func (sc *scanner) run(r io.Reader) error { return sc.runSegments([]segRef{{r: r}}) }

// runSegments scans the segments in order, each settled before the next
// (see settle). It returns only read errors and callback errors; findings
// go to sc.fail and sc.torn.
func (sc *scanner) runSegments(segs []segRef) error {
	fr := newFrameReader(nil)
	for k := range segs {
		seg := &segs[k]
		if sc.fail != nil {
			break
		}
		if seg.next != "" {
			sc.fail = &Finding{Seq: sc.next, File: seg.name, Kind: FindingSegmentMissing,
				Message: fmt.Sprintf("segment %s is missing (the next one present is %s): records were removed from the log", seg.name, seg.next)}
			break
		}
		rc, err := seg.open()
		if err != nil {
			return fmt.Errorf("read audit log: %w", err)
		}
		if sc.torn != nil {
			// After a torn write nothing may follow.
			err = sc.checkEmpty(rc, seg)
			rc.Close()
			if err != nil {
				return err
			}
			continue
		}
		sc.bytes += sc.end
		sc.end = 0
		sc.seg = seg
		sc.recVersion = version2
		if seg.index == 0 && sc.haveHdr {
			sc.recVersion = sc.hdr.version
		}
		fr.reset(rc, 0, seg.index > 0 || (sc.haveHdr && sc.hdr.version == version2))
		err = sc.runSegment(fr)
		rc.Close()
		if err != nil {
			return err
		}
		if segmentScanned != nil {
			segmentScanned(seg)
		}
		then, err := sc.settle(fr, segs, k)
		if err != nil {
			return err
		}
		if sc.end > 0 {
			sc.segments++
		}
		if then == lastInUse {
			break
		}
	}
	sc.bytes += sc.end
	if sc.fail == nil && !sc.haveHdr {
		msg := "the log is empty: it has no header record"
		if sc.torn != nil {
			msg = "the log has no complete header record: " + sc.torn.Reason
		}
		sc.fail = &Finding{Seq: 0, Offset: 0, Kind: FindingNoHeader, Message: msg}
	}
	if sc.fail == nil {
		for _, a := range sc.anchorN {
			if a.Seq >= sc.next {
				sc.fail = &Finding{Seq: sc.next, File: sc.segName(), Offset: sc.end, Kind: FindingTruncated,
					Message: fmt.Sprintf("the log ends before seq %d, which an anchor records: records were cut from the end", a.Seq)}
				break
			}
		}
	}
	return nil
}

// segmentScanned, when set, is called after a scan has read a segment
// (tests change the log there, as a writer appending to it would).
var segmentScanned func(seg *segRef)

// runSegment reads the frames of one segment.
func (sc *scanner) runSegment(fr *frameReader) error {
	for {
		f, err := fr.next()
		if err == io.EOF {
			return nil
		}
		var t *tail
		if errors.As(err, &t) {
			if t.torn {
				sc.torn = &Torn{File: sc.segName(), Offset: t.off, Bytes: t.n, Reason: t.reason}
				sc.tornSeg = sc.seg
			} else {
				kind := FindingLinkMismatch
				if _, ok := lengthOK(fr.lastHeader()); !ok {
					kind = FindingBadLength
				}
				sc.fail = &Finding{Seq: sc.next, File: sc.segName(), Offset: t.off, Kind: kind, Message: t.reason}
				sc.failTail = true
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("read audit log at offset %d: %w", fr.off, err)
		}
		if err := sc.record(f); err != nil {
			return err
		}
		if sc.fail != nil {
			return nil
		}
		if f.typ == recHeader {
			// The first file of a version 2 log is a pre-allocated segment
			// too; a version 1 file keeps version 1 records.
			fr.prealloc = sc.hdr.version == version2
			sc.recVersion = sc.hdr.version
		}
	}
}

// checkEmpty fails the scan when a segment after a torn write holds any
// record bytes.
func (sc *scanner) checkEmpty(r io.Reader, seg *segRef) error {
	at, err := firstNonZero(r)
	if err != nil {
		return fmt.Errorf("read audit log: %w", err)
	}
	if at >= 0 {
		sc.fail = &Finding{Seq: sc.next, File: seg.name, Offset: at, Kind: FindingBadType,
			Message: fmt.Sprintf("segment %s holds bytes after a torn write in %s: a crash leaves nothing after the write it interrupted", seg.name, sc.torn.File)}
	}
	return nil
}

// lastHeader returns the length header of the frame the reader stopped at.
func (fr *frameReader) lastHeader() []byte { return fr.hdr[:] }

func (sc *scanner) record(f *frame) error {
	if f.seq != sc.next {
		sc.failAt(f, FindingSeqMismatch, "the record carries seq %d where seq %d belongs: a record was deleted, inserted, moved or duplicated", f.seq, sc.next)
		return nil
	}
	if f.prev != sc.head {
		sc.failAt(f, FindingPrevMismatch, "the record does not link to the record before it: a record before it was deleted, inserted or replaced")
		return nil
	}
	switch {
	case sc.next == 0 && f.typ != recHeader:
		sc.failAt(f, FindingNoHeader, "the first record is not a header (type %d)", f.typ)
		return nil
	case sc.next == 1 && f.typ != recCheckpoint:
		sc.failAt(f, FindingHeaderUnsealed, "the record after the header is not the first checkpoint: a writer seals the header at once, so this log was not made by one, or its first checkpoint was removed")
		return nil
	}
	switch f.typ {
	case recHeader:
		if sc.next != 0 {
			sc.failAt(f, FindingBadType, "a header record in the middle of the log")
			return nil
		}
		h, err := parseHeader(f.payload)
		if errors.Is(err, ErrNewerFormat) {
			// Not a finding: nothing here says the log is damaged.
			switch {
			case sc.seg != nil && sc.seg.path != "":
				return fmt.Errorf("%s: %w", sc.seg.path, err)
			case sc.segName() != "":
				return fmt.Errorf("%s: %w", sc.segName(), err)
			}
			return err
		}
		if err != nil {
			sc.failAt(f, FindingBadHeader, "%v", err)
			return nil
		}
		if sc.pin != nil && h.pk0 != *sc.pin {
			sc.failAt(f, FindingPinMismatch, "the header's first checkpoint key %s is not the pinned %s: this is another log, or the log was replaced",
				FormatPK0(h.pk0[:]), FormatPK0(sc.pin[:]))
			return nil
		}
		for _, a := range sc.anchorN {
			if id := hex.EncodeToString(h.logID[:]); a.LogID != "" && a.LogID != id {
				sc.failAt(f, FindingAnchorMismatch, "an anchor is of log %s, and this is log %s: the log was replaced", a.LogID, id)
				return nil
			}
		}
		sc.hdr, sc.haveHdr = h, true
		sc.key, sc.haveKey = h.pk0, true
		sc.lastTime = h.created
		if sc.onHeader != nil {
			if err := sc.onHeader(&h); err != nil {
				return err
			}
		}
	case recEntry:
		if !entryCiphertextOK(sc.recVersion, len(f.payload)) {
			sc.failAt(f, FindingBadCiphertext, "the entry's ciphertext is %d bytes, a size no writer produces", len(f.payload))
			return nil
		}
		if sc.lastCP != nil && sc.lastCP.MaxUnsealed != 0 && sc.sinceCP+1 > uint64(sc.lastCP.MaxUnsealed) {
			sc.failAt(f, FindingMissingCheckpoint, "more than %d entries follow checkpoint epoch %d (seq %d), which committed the writer to seal every %d: a checkpoint was removed, or entries were added by something other than the writer",
				sc.lastCP.MaxUnsealed, sc.lastCP.Epoch, sc.lastCP.Seq, sc.lastCP.MaxUnsealed)
			return nil
		}
		if sc.onEntry != nil {
			if err := sc.onEntry(f.seq, f.payload); err != nil {
				return err
			}
		}
		sc.entries++
		sc.sinceCP++
	case recCheckpoint:
		c, err := parseCheckpoint(sc.recVersion, f.payload)
		if err != nil {
			sc.failAt(f, FindingBadCheckpoint, "%v", err)
			return nil
		}
		if sc.resumed && !sc.haveKey {
			// The first checkpoint after a resumed start: the key that
			// signed it is in the checkpoint before, which was not read.
			sc.epoch, sc.key, sc.haveKey = c.epoch, c.nextPK, true
			sc.epoch++
			sc.lastTime = c.time
			sc.cps++
			sc.sinceCP = 0
			sc.lastCP = &CheckpointInfo{Seq: f.seq, File: sc.segName(), Offset: f.off, Epoch: c.epoch, Time: unixNano(c.time), MaxUnsealed: c.maxUnsealed}
			break
		}
		if c.epoch != sc.epoch {
			sc.failAt(f, FindingEpochGap, "checkpoint has epoch %d where epoch %d belongs: checkpoints were removed, reordered or forged", c.epoch, sc.epoch)
			return nil
		}
		if !ed25519.Verify(sc.key[:], c.signedMessage(sc.hdr.logID, f.seq, f.prev), c.sig[:]) {
			src := "pk0"
			if sc.lastCP != nil {
				src = fmt.Sprintf("checkpoint epoch %d (seq %d)", sc.lastCP.Epoch, sc.lastCP.Seq)
			}
			sc.failAt(f, FindingBadSignature, "the signature of checkpoint epoch %d does not verify under the key committed by %s: records it covers were changed, or it was signed with another key", c.epoch, src)
			return nil
		}
		if c.time < sc.lastTime {
			sc.failAt(f, FindingTimeBackwards, "checkpoint time %s is before the previous checkpoint or header time %s",
				unixNano(c.time).Format(time.RFC3339Nano), unixNano(sc.lastTime).Format(time.RFC3339Nano))
			return nil
		}
		if sc.onCheckpoint != nil {
			if err := sc.onCheckpoint(f.seq, &c); err != nil {
				return err
			}
		}
		sc.key = c.nextPK
		sc.epoch++
		sc.lastTime = c.time
		sc.cps++
		sc.sinceCP = 0
		sc.lastCP = &CheckpointInfo{Seq: f.seq, File: sc.segName(), Offset: f.off, Epoch: c.epoch, Time: unixNano(c.time), MaxUnsealed: c.maxUnsealed}
	default:
		sc.failAt(f, FindingBadType, "unknown record type %d", f.typ)
		return nil
	}
	for _, want := range sc.anchors[f.seq] {
		if want != f.link {
			sc.failAt(f, FindingAnchorMismatch, "the chain head after this record differs from an anchor recorded for it (%x): the log was rewritten from here back, or forked", want[:8])
			return nil
		}
	}
	if sc.onFrame != nil {
		if err := sc.onFrame(f); err != nil {
			return err
		}
	}
	sc.head = f.link
	sc.next++
	sc.end = f.off + f.size
	return nil
}
