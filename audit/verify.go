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
	// PK0Beside says PK0 was read from the pin file beside the log, which
	// whoever replaces the log can replace with it: the log is checked
	// against it, and a wholly replaced log is still among what the
	// report cannot prove.
	PK0Beside bool
	// AnchorsBeside are anchors read beside the log (audit.anchor),
	// checked as Anchors are; whoever cuts the log can rewrite them with
	// it, so they do not rule a cut tail out.
	AnchorsBeside []Anchor
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
	FindingSegmentMissing    FindingKind = "segment_missing"    // a segment file is missing from the numbering
)

// Finding locates the first bad record.
type Finding struct {
	Seq     uint64      `json:"seq"`            // position of the record (the seq it should have)
	File    string      `json:"file,omitempty"` // the segment file it is in (a log of several files)
	Offset  int64       `json:"offset"`         // byte offset of its length field in that file
	Kind    FindingKind `json:"kind"`
	Message string      `json:"message"`
}

// Torn describes a record a crash left unfinished at the end of the log.
type Torn struct {
	File   string `json:"file,omitempty"`
	Offset int64  `json:"offset"`
	Bytes  int64  `json:"bytes"`
	Reason string `json:"reason"`
}

// CheckpointInfo describes a checkpoint record.
type CheckpointInfo struct {
	Seq         uint64    `json:"seq"`
	File        string    `json:"file,omitempty"`
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

	// Version is the header's format version.
	Version int `json:"version,omitempty"`
	// Segments counts the files that hold records.
	Segments int `json:"segments,omitempty"`

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
	return fmt.Errorf("%w: record seq %d at %s: %s", ErrVerify, r.Failure.Seq, r.Failure.Where(), r.Failure.Message)
}

// Where says where the record is: "offset N", or "offset N of FILE" in a
// log of several files.
func (f *Finding) Where() string {
	if f.File == "" {
		return fmt.Sprintf("offset %d", f.Offset)
	}
	return fmt.Sprintf("offset %d of %s", f.Offset, f.File)
}

// Verify checks a log read from r without any key: framing, sequence
// numbers, the hash chain, the header, every checkpoint signature along the
// key chain, epoch contiguity, that checkpoints sign the chain head at their
// position, that their times do not go backwards, and that no more entries
// go unsealed than the last checkpoint allows. r holds the log's first (or
// only) file; VerifyPath also reads the segments after it. The error is
// non-nil only when the input could not be read; what is wrong with the log
// is in the report.
func Verify(r io.Reader, opts VerifyOptions) (*Report, error) {
	return verifySegments([]segRef{{r: r}}, opts)
}

// VerifyPath verifies the log at path, every segment of it, as Verify does.
func VerifyPath(path string, opts VerifyOptions) (*Report, error) {
	segs, err := readSegments(path, 0)
	if err != nil {
		return nil, err
	}
	return verifySegments(segs, opts)
}

func verifySegments(segs []segRef, opts VerifyOptions) (*Report, error) {
	sc, err := newScanner(opts)
	if err != nil {
		return nil, err
	}
	if err := sc.runSegments(segs); err != nil {
		return nil, err
	}
	return sc.report(), nil
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
		Bytes:           sc.bytes,
		Segments:        sc.segments,
		LastCheckpoint:  sc.lastCP,
		UnsealedEntries: sc.sinceCP,
	}
	if sc.haveHdr {
		r.LogID = hex.EncodeToString(sc.hdr.logID[:])
		r.Version = int(sc.hdr.version)
		r.Created = unixNano(sc.hdr.created)
		r.PK0 = FormatPK0(sc.hdr.pk0[:])
		r.Recipient = FormatRecipient(sc.hdr.recipient)
		r.Head = &Anchor{LogID: r.LogID, Seq: sc.next - 1, Link: hex.EncodeToString(sc.head[:])}
	}
	if sc.torn != nil {
		where := ""
		if sc.torn.File != "" {
			where = " of " + sc.torn.File
		}
		r.Warnings = append(r.Warnings, fmt.Sprintf("torn tail: %d bytes at offset %d%s are not a complete record (%s); a writer cuts them away and records that when it next opens the log",
			sc.torn.Bytes, sc.torn.Offset, where, sc.torn.Reason))
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
	switch {
	case len(sc.anchorN) == sc.besideN && sc.besideN > 0:
		out = append(out, fmt.Sprintf("that nothing was cut from the end: records after %s, and whole checkpoints at the end, can be removed without a trace unless a chain head was anchored elsewhere than beside the log, where whoever cuts the log can rewrite the anchor with it", last))
	case len(sc.anchorN) == 0:
		out = append(out, fmt.Sprintf("that nothing was cut from the end: records after %s, and whole checkpoints at the end, can be removed without a trace unless a chain head was anchored elsewhere", last))
	default:
		out = append(out, "that nothing was cut from the end after the last anchor")
	}
	switch {
	case sc.sinceCP == 1:
		out = append(out, fmt.Sprintf("that the entry after %s is original: no signature covers it yet, so anyone able to write the file can rewrite or drop it, add others, and recompute the chain", last))
	case sc.sinceCP > 1:
		out = append(out, fmt.Sprintf("that the %d entries after %s are original: no signature covers them yet, so anyone able to write the file can rewrite, drop or add them and recompute the chain", sc.sinceCP, last))
	}
	switch {
	case sc.pin == nil:
		out = append(out, "that this is the original log: pk0 was not pinned, so a wholly replaced log with keys of its own verifies; pin the pk0 printed at setup")
	case sc.pinBeside:
		out = append(out, "that this is the original log: pk0 was pinned only by the pin file beside the log, which whoever replaces the log can replace with it; pin the pk0 printed at setup")
	}
	out = append(out, "that the events are true: checkpoints prove which key sealed the records, not that the gateway that wrote them told the truth, and a holder of the current signing key can seal records added after the last checkpoint")
	return out
}
