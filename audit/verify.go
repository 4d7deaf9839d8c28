package audit

import (
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"
)

// VerifyOptions tune Verify.
type VerifyOptions struct {
	// PK0 pins the first checkpoint key. Without it the key in the header is
	// trusted as found, and a wholly replaced log verifies.
	PK0 ed25519.PublicKey
	// Anchors are chain heads recorded elsewhere (the vault, the system
	// journal, another host). Each must be present in the log; an anchor past
	// the end shows the tail was cut.
	Anchors []Anchor
}

// Anchor names a point of a log: after record Seq the chain head was Link.
type Anchor struct {
	LogID string `json:"log_id"` // hex
	Seq   uint64 `json:"seq"`
	Link  string `json:"link"` // hex
}

// FindingKind classifies what is wrong with a record.
type FindingKind string

// Kinds of failure.
const (
	FindingNoHeader          FindingKind = "no_header"          // the input does not start with a header record
	FindingBadLength         FindingKind = "bad_length"         // a length field is corrupt
	FindingLinkMismatch      FindingKind = "link_mismatch"      // a record's bytes were altered
	FindingSeqMismatch       FindingKind = "seq_mismatch"       // a record was deleted, inserted, moved or duplicated
	FindingPrevMismatch      FindingKind = "prev_mismatch"      // a record does not link to the one before it
	FindingBadType           FindingKind = "bad_type"           // unknown record type, or a header past the start
	FindingBadHeader         FindingKind = "bad_header"         // malformed header
	FindingPinMismatch       FindingKind = "pk0_mismatch"       // the header's pk0 is not the pinned one
	FindingHeaderUnsealed    FindingKind = "header_unsealed"    // the record after the header is not checkpoint 0
	FindingBadCheckpoint     FindingKind = "bad_checkpoint"     // malformed checkpoint
	FindingEpochGap          FindingKind = "epoch_gap"          // checkpoint epochs are not contiguous
	FindingBadSignature      FindingKind = "bad_signature"      // a checkpoint does not verify under its epoch's key
	FindingTimeBackwards     FindingKind = "time_backwards"     // a checkpoint is older than the one before it
	FindingMissingCheckpoint FindingKind = "checkpoint_missing" // more entries without a checkpoint than the last one allows
	FindingBadCiphertext     FindingKind = "bad_ciphertext"     // an entry's ciphertext has a size the writer cannot produce
	FindingAnchorMismatch    FindingKind = "anchor_mismatch"    // the log differs from an anchor
	FindingTruncated         FindingKind = "truncated"          // the log ends before an anchor
)

// Finding locates the first bad record.
type Finding struct {
	Seq     uint64      `json:"seq"`    // position of the record (the seq it should have)
	Offset  int64       `json:"offset"` // byte offset of its length field
	Kind    FindingKind `json:"kind"`
	Message string      `json:"message"`
}

// Torn describes a record a crash left unfinished at the end of the log.
type Torn struct {
	Offset int64  `json:"offset"`
	Bytes  int64  `json:"bytes"`
	Reason string `json:"reason"`
}

// CheckpointInfo describes a checkpoint record.
type CheckpointInfo struct {
	Seq         uint64    `json:"seq"`
	Offset      int64     `json:"offset"`
	Epoch       uint64    `json:"epoch"`
	Time        time.Time `json:"time"`
	MaxUnsealed uint32    `json:"max_unsealed"` // 0: no limit was committed
}

// Report is the result of Verify.
type Report struct {
	// OK is true when nothing is wrong. A torn tail is a warning, not a
	// failure.
	OK       bool     `json:"ok"`
	Failure  *Finding `json:"failure,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
	Torn     *Torn    `json:"torn_tail,omitempty"`

	LogID     string    `json:"log_id,omitempty"`
	Created   time.Time `json:"created,omitzero"`
	PK0       string    `json:"pk0,omitempty"`
	PK0Pinned bool      `json:"pk0_pinned"`
	Recipient string    `json:"recipient,omitempty"`

	// Totals over the records that verified (all of them when OK).
	Records     uint64 `json:"records"`
	Entries     uint64 `json:"entries"`
	Checkpoints uint64 `json:"checkpoints"`
	Bytes       int64  `json:"bytes"`
	// Head is the chain head after the last record that verified.
	Head           *Anchor         `json:"head,omitempty"`
	LastCheckpoint *CheckpointInfo `json:"last_checkpoint,omitempty"`
	// UnsealedEntries counts entries after the last checkpoint. No signature
	// covers them.
	UnsealedEntries uint64 `json:"unsealed_entries"`
	// CannotProve lists what this verification cannot establish.
	CannotProve []string `json:"cannot_prove"`
}

// ErrVerify is wrapped by Report.Err.
var ErrVerify = errors.New("audit log failed verification")

// Err returns nil when the report is OK, and otherwise an error naming the
// first bad record.
func (r *Report) Err() error {
	if r.OK {
		return nil
	}
	if r.Failure == nil {
		return ErrVerify
	}
	return fmt.Errorf("%w: record seq %d at offset %d: %s", ErrVerify, r.Failure.Seq, r.Failure.Offset, r.Failure.Message)
}

// Verify checks a log without any key: framing, sequence numbers, the hash
// chain, the header, every checkpoint signature along the key chain, epoch
// contiguity, that checkpoints sign the chain head at their position, that
// their times do not go backwards, and that no more entries go unsealed than
// the last checkpoint allows. The error is non-nil only when the input could
// not be read; what is wrong with the log is in the report.
func Verify(r io.Reader, opts VerifyOptions) (*Report, error) {
	sc, err := newScanner(opts)
	if err != nil {
		return nil, err
	}
	if err := sc.run(r); err != nil {
		return nil, err
	}
	return sc.report(), nil
}

// scanner walks a log and keeps the state a writer needs to continue it.
type scanner struct {
	pin     *[32]byte
	anchors map[uint64][32]byte
	anchorN []Anchor

	// Callbacks for records that verified.
	onHeader     func(h *header) error
	onEntry      func(seq uint64, ct []byte) error
	onCheckpoint func(seq uint64, c *checkpoint) error

	end      int64 // offset after the last good record
	next     uint64
	head     [32]byte
	hdr      header
	haveHdr  bool
	entries  uint64
	cps      uint64
	epoch    uint64   // epoch of the next checkpoint
	key      [32]byte // key that must sign it
	lastCP   *CheckpointInfo
	sinceCP  uint64 // entries after the last checkpoint
	lastTime int64
	torn     *Torn
	fail     *Finding
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
	}
	for _, a := range opts.Anchors {
		l, err := hex.DecodeString(a.Link)
		if err != nil || len(l) != 32 {
			return nil, fmt.Errorf("anchor for seq %d has a malformed link %q", a.Seq, a.Link)
		}
		if sc.anchors == nil {
			sc.anchors = map[uint64][32]byte{}
		}
		sc.anchors[a.Seq] = [32]byte(l)
		sc.anchorN = append(sc.anchorN, a)
	}
	return sc, nil
}

func (sc *scanner) failAt(f *frame, kind FindingKind, format string, args ...any) {
	off := sc.end
	if f != nil {
		off = f.off
	}
	sc.fail = &Finding{Seq: sc.next, Offset: off, Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// run scans the whole input. It returns only read errors and callback
// errors; findings go to sc.fail and sc.torn.
func (sc *scanner) run(r io.Reader) error {
	fr := newFrameReader(r)
	for {
		f, err := fr.next()
		if err == io.EOF {
			break
		}
		var t *tail
		if errors.As(err, &t) {
			if t.torn {
				sc.torn = &Torn{Offset: t.off, Bytes: t.n, Reason: t.reason}
			} else {
				kind := FindingLinkMismatch
				if _, ok := lengthOK(fr.lastHeader()); !ok {
					kind = FindingBadLength
				}
				sc.fail = &Finding{Seq: sc.next, Offset: t.off, Kind: kind, Message: t.reason}
			}
			break
		}
		if err != nil {
			return fmt.Errorf("read audit log at offset %d: %w", fr.off, err)
		}
		if err := sc.record(f); err != nil {
			return err
		}
		if sc.fail != nil {
			break
		}
	}
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
				sc.fail = &Finding{Seq: sc.next, Offset: sc.end, Kind: FindingTruncated,
					Message: fmt.Sprintf("the log ends before seq %d, which an anchor records: records were cut from the end", a.Seq)}
				break
			}
		}
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
		if err != nil {
			sc.failAt(f, FindingBadHeader, "%v", err)
			return nil
		}
		if sc.pin != nil && h.pk0 != *sc.pin {
			sc.failAt(f, FindingPinMismatch, "the header's first checkpoint key %s is not the pinned %s: this is another log, or the log was replaced",
				FormatPK0(h.pk0[:]), FormatPK0(sc.pin[:]))
			return nil
		}
		sc.hdr, sc.haveHdr = h, true
		sc.key = h.pk0
		sc.lastTime = h.created
		if sc.onHeader != nil {
			if err := sc.onHeader(&h); err != nil {
				return err
			}
		}
	case recEntry:
		if !entryCiphertextOK(len(f.payload)) {
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
		c, err := parseCheckpoint(f.payload)
		if err != nil {
			sc.failAt(f, FindingBadCheckpoint, "%v", err)
			return nil
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
		sc.lastCP = &CheckpointInfo{Seq: f.seq, Offset: f.off, Epoch: c.epoch, Time: unixNano(c.time), MaxUnsealed: c.maxUnsealed}
	default:
		sc.failAt(f, FindingBadType, "unknown record type %d", f.typ)
		return nil
	}
	if want, ok := sc.anchors[f.seq]; ok && want != f.link {
		sc.failAt(f, FindingAnchorMismatch, "the chain head after this record differs from the anchor recorded for it: the log was rewritten from here back, or forked")
		return nil
	}
	sc.head = f.link
	sc.next++
	sc.end = f.off + f.size
	return nil
}

func (sc *scanner) report() *Report {
	r := &Report{
		OK:              sc.fail == nil,
		Failure:         sc.fail,
		Torn:            sc.torn,
		PK0Pinned:       sc.pin != nil,
		Records:         sc.next,
		Entries:         sc.entries,
		Checkpoints:     sc.cps,
		Bytes:           sc.end,
		LastCheckpoint:  sc.lastCP,
		UnsealedEntries: sc.sinceCP,
	}
	if sc.haveHdr {
		r.LogID = hex.EncodeToString(sc.hdr.logID[:])
		r.Created = unixNano(sc.hdr.created)
		r.PK0 = FormatPK0(sc.hdr.pk0[:])
		r.Recipient = FormatRecipient(sc.hdr.recipient)
		r.Head = &Anchor{LogID: r.LogID, Seq: sc.next - 1, Link: hex.EncodeToString(sc.head[:])}
	}
	if sc.torn != nil {
		r.Warnings = append(r.Warnings, fmt.Sprintf("torn tail: %d bytes at offset %d are not a complete record (%s); a writer cuts them away and records that when it next opens the log",
			sc.torn.Bytes, sc.torn.Offset, sc.torn.Reason))
	}
	if sc.haveHdr && sc.cps == 0 && r.OK {
		r.Warnings = append(r.Warnings, "the log has no checkpoint yet: nothing in it is signed")
	}
	r.CannotProve = sc.limits()
	return r
}

func (sc *scanner) limits() []string {
	var out []string
	last := "the header"
	if sc.lastCP != nil {
		last = fmt.Sprintf("the last checkpoint (seq %d, epoch %d)", sc.lastCP.Seq, sc.lastCP.Epoch)
	}
	if len(sc.anchorN) == 0 {
		out = append(out, fmt.Sprintf("that nothing was cut from the end: records after %s, and whole checkpoints at the end, can be removed without a trace unless a chain head was anchored elsewhere", last))
	} else {
		out = append(out, "that nothing was cut from the end after the last anchor")
	}
	if sc.sinceCP > 0 {
		out = append(out, fmt.Sprintf("that the %d entries after %s are original: no signature covers them yet, so anyone able to write the file can rewrite, drop or add them and recompute the chain", sc.sinceCP, last))
	}
	if sc.pin == nil {
		out = append(out, "that this is the original log: pk0 was not pinned, so a wholly replaced log with keys of its own verifies; pin the pk0 printed at setup")
	}
	out = append(out, "that the events are true: checkpoints prove which key sealed the records, not that the gateway that wrote them told the truth, and a holder of the current signing key can seal records added after the last checkpoint")
	return out
}
