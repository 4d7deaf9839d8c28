package audit

import (
	"bytes"
	"crypto/ed25519"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/postern/postern/internal/atomicfile"
)

// sealedLog builds a closed log with CheckpointEvery=4 and 10 entries:
//
//	0 header, 1 cp0, 2-5 entries, 6 cp1, 7-10 entries, 11 cp2,
//	12-13 entries, 14 cp3 (written by Close)
func sealedLog(t *testing.T) (*testLog, []byte) {
	t.Helper()
	tl := newTestSetup(t)
	tl.cfg.CheckpointEvery = 4
	l := tl.open(t)
	for i := 0; i < 10; i++ {
		mustAppend(t, l, ev(EventSign, "R31"))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	b := tl.bytes(t)
	sp := spans(t, b)
	want := []byte{recHeader, recCheckpoint, recEntry, recEntry, recEntry, recEntry, recCheckpoint,
		recEntry, recEntry, recEntry, recEntry, recCheckpoint, recEntry, recEntry, recCheckpoint}
	if len(sp) != len(want) {
		t.Fatalf("log has %d records, want %d", len(sp), len(want))
	}
	for i, s := range sp {
		if s.typ != want[i] || s.seq != uint64(i) {
			t.Fatalf("record %d: type %d seq %d", i, s.typ, s.seq)
		}
	}
	if r := verifyBytes(t, b, tl.pin()); !r.OK || r.Torn != nil || len(r.Warnings) != 0 {
		t.Fatalf("honest log: %s %v", describe(r), r.Warnings)
	}
	return tl, b
}

// sealedLogNotEndingInZero is a sealedLog whose last link does not end in
// a zero byte, as 255 logs in 256 do: a changed byte in its last record
// reads as damage, never as a crash that cut the record short
// (TestLastRecordEndingInZeroCanReadAsTorn).
func sealedLogNotEndingInZero(t *testing.T) (*testLog, []byte) {
	t.Helper()
	tl, b := sealedLog(t)
	for b[len(b)-1] == 0 {
		tl, b = sealedLog(t)
	}
	return tl, b
}

// sealedLogEndingInZero is a sealed log whose last record, a checkpoint,
// has a link ending in a zero byte, as one log in 256 has. A log with a
// checkpoint after every entry is cut right after the first such
// checkpoint, as a crash just after it would leave the file: a few
// hundred checkpoints are cheaper to find one in than a few hundred logs.
func sealedLogEndingInZero(t *testing.T) []byte {
	t.Helper()
	for {
		tl := newTestSetup(t)
		tl.cfg.CheckpointEvery = 1
		l := tl.open(t)
		for range 256 {
			mustAppend(t, l, ev(EventSign, "R31"))
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		b := tl.bytes(t)
		for _, s := range spans(t, b)[1:] {
			if end := s.off + s.size; s.typ == recCheckpoint && b[end-1] == 0 {
				return b[:end]
			}
		}
	}
}

func flip(b []byte, i int64) {
	x := b[i] ^ 0x01
	if x == 0 {
		x = 0x80
	}
	b[i] = x
}

func TestHonestLogReport(t *testing.T) {
	tl, b := sealedLog(t)
	r := verifyBytes(t, b, tl.pin())
	if r.Records != 15 || r.Entries != 10 || r.Checkpoints != 4 || r.UnsealedEntries != 0 || r.Bytes != int64(len(b)) {
		t.Fatalf("totals %+v", r)
	}
	if r.LastCheckpoint.Seq != 14 || r.LastCheckpoint.Epoch != 3 || !r.PK0Pinned || r.PK0 != tl.setup.PK0String() {
		t.Fatalf("report %+v", r)
	}
	if r.Head == nil || r.Head.Seq != 14 {
		t.Fatalf("head %+v", r.Head)
	}
	// The report says what it cannot prove.
	joined := strings.Join(r.CannotProve, "\n")
	if !strings.Contains(joined, "cut from the end") || strings.Contains(joined, "not pinned") {
		t.Fatalf("cannot prove: %q", joined)
	}
	js, err := json.Marshal(r)
	if err != nil || !bytes.Contains(js, []byte(`"ok":true`)) || !bytes.Contains(js, []byte(`"cannot_prove"`)) {
		t.Fatalf("json %s %v", js, err)
	}
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
}

func TestFlippedByteInEachRegion(t *testing.T) {
	_, orig := sealedLogNotEndingInZero(t)
	sp := spans(t, orig)
	entry, cp, last := sp[7], sp[6], sp[14]
	cases := []struct {
		name string
		at   int64
		kind FindingKind
		rec  span
	}{
		{"length", entry.off + 2, FindingBadLength, entry},
		{"length complement", entry.off + 6, FindingBadLength, entry},
		{"type", entry.off + 8, FindingLinkMismatch, entry},
		{"seq", entry.off + 8 + 1 + 7, FindingLinkMismatch, entry},
		{"prev", entry.off + 8 + 9 + 5, FindingLinkMismatch, entry},
		{"ciphertext", entry.off + 8 + 41 + 100, FindingLinkMismatch, entry},
		{"link", entry.off + entry.size - 3, FindingLinkMismatch, entry},
		{"checkpoint epoch", cp.off + 8 + 41 + 7, FindingLinkMismatch, cp},
		{"checkpoint next key", cp.off + 8 + 41 + 20, FindingLinkMismatch, cp},
		{"checkpoint signature", cp.off + 8 + 41 + 52 + 10, FindingLinkMismatch, cp},
		{"header pk0", sp[0].off + 8 + 41 + 14 + 16 + 8 + 3, FindingLinkMismatch, sp[0]},
		// The last record is never excused as torn when it is complete.
		{"last length", last.off + 3, FindingBadLength, last},
		{"last signature", last.off + 8 + 41 + 52 + 1, FindingLinkMismatch, last},
		{"last link", last.off + last.size - 1, FindingLinkMismatch, last},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := bytes.Clone(orig)
			flip(b, c.at)
			r := verifyBytes(t, b, VerifyOptions{})
			expectFailure(t, r, c.kind, c.rec.seq, c.rec.off)
			if r.Torn != nil {
				t.Fatalf("tampering reported as a torn tail: %+v", r.Torn)
			}
			if r.Err() == nil || !errors.Is(r.Err(), ErrVerify) {
				t.Fatalf("Err: %v", r.Err())
			}
		})
	}
}

func TestFlippedSignatureWithRecomputedChain(t *testing.T) {
	_, orig := sealedLog(t)
	sp := spans(t, orig)
	b := bytes.Clone(orig)
	flip(b, sp[6].off+8+41+52+10)
	r := verifyBytes(t, rechain(t, b), VerifyOptions{})
	expectFailure(t, r, FindingBadSignature, 6, sp[6].off)
}

func TestDeletedSwappedInsertedRecords(t *testing.T) {
	_, orig := sealedLog(t)
	sp := spans(t, orig)
	recs := records(t, orig)

	t.Run("deleted", func(t *testing.T) {
		b := join(append(append([][]byte{}, recs[:7]...), recs[8:]...))
		expectFailure(t, verifyBytes(t, b, VerifyOptions{}), FindingSeqMismatch, 7, sp[7].off)
	})
	t.Run("swapped", func(t *testing.T) {
		rs := append([][]byte{}, recs...)
		rs[7], rs[8] = rs[8], rs[7]
		expectFailure(t, verifyBytes(t, join(rs), VerifyOptions{}), FindingSeqMismatch, 7, sp[7].off)
	})
	t.Run("inserted copy", func(t *testing.T) {
		rs := append(append(append([][]byte{}, recs[:7]...), recs[3]), recs[7:]...)
		expectFailure(t, verifyBytes(t, join(rs), VerifyOptions{}), FindingSeqMismatch, 7, sp[7].off)
	})
	t.Run("deleted header", func(t *testing.T) {
		expectFailure(t, verifyBytes(t, join(recs[1:]), VerifyOptions{}), FindingSeqMismatch, 0, 0)
	})
	t.Run("deleted and rechained", func(t *testing.T) {
		b := rechain(t, join(append(append([][]byte{}, recs[:7]...), recs[8:]...)))
		// The checkpoint that covered record 7 (seq 11, now at 10) no longer verifies.
		expectFailure(t, verifyBytes(t, b, VerifyOptions{}), FindingBadSignature, 10, -1)
	})
	t.Run("swapped and rechained", func(t *testing.T) {
		rs := append([][]byte{}, recs...)
		rs[7], rs[8] = rs[8], rs[7]
		expectFailure(t, verifyBytes(t, rechain(t, join(rs)), VerifyOptions{}), FindingBadSignature, 11, sp[11].off)
	})
	t.Run("checkpoint removed and rechained", func(t *testing.T) {
		b := rechain(t, join(append(append([][]byte{}, recs[:6]...), recs[7:]...)))
		// Four entries per checkpoint were promised; the fifth gives it away.
		expectFailure(t, verifyBytes(t, b, VerifyOptions{}), FindingMissingCheckpoint, 6, sp[6].off)
	})
}

func TestCheckpointRemovedWithoutCountPolicy(t *testing.T) {
	tl := newTestSetup(t)
	tl.cfg.CheckpointEvery = -1
	l := tl.open(t)
	for i := 0; i < 3; i++ {
		mustAppend(t, l, ev(EventSign, "R1"))
		if err := l.Checkpoint(); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	recs := records(t, tl.bytes(t)) // 0 H, 1 cp0, 2 e, 3 cp1, 4 e, 5 cp2, 6 e, 7 cp3
	b := rechain(t, join(append(append([][]byte{}, recs[:3]...), recs[4:]...)))
	expectFailure(t, verifyBytes(t, b, tl.pin()), FindingEpochGap, 4, -1)
}

// sealFor seals an event as the writer would, for forging tests.
func sealFor(t *testing.T, logID [16]byte, seq uint64, recipient [32]byte, e Event) []byte {
	t.Helper()
	js, _ := json.Marshal(e)
	seed, err := newChainSeed(&recipient)
	if err != nil {
		t.Fatal(err)
	}
	c := startChain(seed)
	n, key := c.next()
	ct, err := sealEntry(logID, seq, js, c.epk, n, &key)
	if err != nil {
		t.Fatal(err)
	}
	return ct
}

func logIDOf(t *testing.T, b []byte) [16]byte {
	recs := records(t, b)
	h, err := parseHeader(payloadOf(recs[0]))
	if err != nil {
		t.Fatal(err)
	}
	return h.logID
}

// withPayload returns rec with its payload replaced (chain not fixed).
func withPayload(rec []byte, payload []byte) []byte {
	body := append([]byte{}, rec[frameHeaderSize:frameHeaderSize+bodyFixedSize]...)
	body = append(body, payload...)
	out := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	out = binary.BigEndian.AppendUint32(out, ^uint32(len(body)))
	out = append(out, body...)
	return append(out, make([]byte, linkSize)...)
}

func TestTailRewriteCoveredByCheckpoint(t *testing.T) {
	tl, orig := sealedLog(t)
	sp := spans(t, orig)
	recs := records(t, orig)
	id := logIDOf(t, orig)
	forged := sealFor(t, id, 12, tl.setup.Recipient, Event{Type: EventSign, Run: "R99"})
	rs := append([][]byte{}, recs...)
	rs[12] = withPayload(rs[12], forged)
	b := rechain(t, join(rs))
	expectFailure(t, verifyBytes(t, b, tl.pin()), FindingBadSignature, 14, sp[14].off)

	// An entry inserted before the last checkpoint, chain recomputed.
	rs = append(append(append([][]byte{}, recs[:13]...), withPayload(recs[12], forged)), recs[13:]...)
	expectFailure(t, verifyBytes(t, rechain(t, join(rs)), tl.pin()), FindingBadSignature, 15, -1)
}

// openLogWithUnsealedTail returns the bytes of a log that has three entries
// after its last checkpoint, as a crash would leave it.
func openLogWithUnsealedTail(t *testing.T) (*testLog, *Log, []byte) {
	tl := newTestSetup(t)
	l := tl.open(t)
	for i := 0; i < 3; i++ {
		mustAppend(t, l, ev(EventSign, "R1"))
	}
	if err := l.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		mustAppend(t, l, ev(EventSign, "R2"))
	}
	return tl, l, tl.bytes(t)
}

func TestUnsealedTailRewriteIsNotDetectable(t *testing.T) {
	tl, l, orig := openLogWithUnsealedTail(t)
	head := l.Head()
	l.Close()
	r := verifyBytes(t, orig, tl.pin())
	if !r.OK || r.UnsealedEntries != 3 {
		t.Fatalf("honest unsealed tail: %s unsealed=%d", describe(r), r.UnsealedEntries)
	}
	recs := records(t, orig)
	n := len(recs)
	id := logIDOf(t, orig)
	forged := sealFor(t, id, uint64(n-1), tl.setup.Recipient, Event{Type: EventSign, Run: "R99"})
	rs := append([][]byte{}, recs...)
	rs[n-1] = withPayload(rs[n-1], forged)
	b := rechain(t, join(rs))
	r = verifyBytes(t, b, tl.pin())
	if !r.OK {
		t.Fatalf("an unsealed rewrite cannot be detected offline, yet verify failed: %s", describe(r))
	}
	joined := strings.Join(r.CannotProve, "\n")
	if r.UnsealedEntries != 3 || !strings.Contains(joined, "3 entries after the last checkpoint") {
		t.Fatalf("report does not say the tail is unsealed: %d %q", r.UnsealedEntries, joined)
	}
	// Dropping the tail is not detectable either; what is left after the
	// checkpoint, one entry, is said as one.
	if r := verifyBytes(t, join(recs[:n-2]), tl.pin()); !r.OK {
		t.Fatalf("cut tail: %s", describe(r))
	} else if joined := strings.Join(r.CannotProve, "\n"); r.UnsealedEntries != 1 || !strings.Contains(joined, "that the entry after the last checkpoint (seq ") || !strings.Contains(joined, "is original: no signature covers it yet") {
		t.Fatalf("report does not say the one entry after the checkpoint is unsealed: %d %q", r.UnsealedEntries, joined)
	}
	// An anchor of the head makes both visible.
	opts := tl.pin()
	opts.Anchors = []Anchor{head}
	expectFailure(t, verifyBytes(t, b, opts), FindingAnchorMismatch, uint64(n-1), -1)
	expectFailure(t, verifyBytes(t, join(recs[:n-2]), opts), FindingTruncated, uint64(n-2), -1)
	// Every anchor counts, though another names the same record: the
	// head of the rewritten log, written beside it as audit.anchor, does
	// not stand in for the person's own copy of the honest head.
	forgedHead := *verifyBytes(t, b, tl.pin()).Head
	opts.Anchors = []Anchor{head, forgedHead}
	expectFailure(t, verifyBytes(t, b, opts), FindingAnchorMismatch, uint64(n-1), -1)
	opts.Anchors = []Anchor{forgedHead, head}
	expectFailure(t, verifyBytes(t, orig, opts), FindingAnchorMismatch, uint64(n-1), -1)
	opts.Anchors = []Anchor{head}
	// An anchor of another log: this log was put in its place.
	other := head
	other.LogID = strings.Repeat("ab", 16)
	opts.Anchors = []Anchor{other}
	expectFailure(t, verifyBytes(t, orig, opts), FindingAnchorMismatch, 0, 0)

	// A ciphertext moved within the unsealed tail passes verify but not
	// decryption: each plaintext names its log and seq.
	rs = append([][]byte{}, recs...)
	p1, p2 := payloadOf(recs[n-1]), payloadOf(recs[n-2])
	rs[n-1], rs[n-2] = withPayload(rs[n-1], p2), withPayload(rs[n-2], p1)
	b = rechain(t, join(rs))
	if r := verifyBytes(t, b, tl.pin()); !r.OK {
		t.Fatalf("moved ciphertext: %s", describe(r))
	}
	_, err := DecodeEvents(bytes.NewReader(b), tl.setup.Identity, VerifyOptions{}, func(Event) error { return nil })
	if !errors.Is(err, errMoved) {
		t.Fatalf("moved ciphertext decrypted: %v", err)
	}
}

func TestWhollyReplacedLog(t *testing.T) {
	tl, _ := sealedLog(t)
	other, b := sealedLog(t)
	_ = other
	// Pinned to the real pk0, the replacement fails at its header.
	expectFailure(t, verifyBytes(t, b, tl.pin()), FindingPinMismatch, 0, 0)
	// Unpinned, it verifies, and the report says why that proves little.
	r := verifyBytes(t, b, VerifyOptions{})
	if !r.OK || r.PK0Pinned || !strings.Contains(strings.Join(r.CannotProve, "\n"), "not pinned") {
		t.Fatalf("unpinned replacement: %s %+v", describe(r), r.CannotProve)
	}
}

// TestForgedLogWithoutCheckpoints: a replacement that copies the pinned pk0
// into its header but cannot sign must not pass as a log whose entries are
// merely unsealed.
func TestForgedLogWithoutCheckpoints(t *testing.T) {
	tl, orig := sealedLog(t)
	recs := records(t, orig)
	rs := [][]byte{recs[0], recs[2], recs[3], recs[4]}
	expectFailure(t, verifyBytes(t, rechain(t, join(rs)), tl.pin()), FindingHeaderUnsealed, 1, -1)
}

func TestOldCheckpointResignedWithNewerKey(t *testing.T) {
	tl, orig := sealedLog(t)
	sp := spans(t, orig)
	recs := records(t, orig)
	// What a thief of the key file holds after Close: the current key.
	keys, err := readKeyFile(tl.setup.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	if keys.epoch != 4 {
		t.Fatalf("key file epoch %d", keys.epoch)
	}
	id := logIDOf(t, orig)
	for _, changeEpoch := range []bool{false, true} {
		c, err := parseCheckpoint(version2, payloadOf(recs[6]))
		if err != nil {
			t.Fatal(err)
		}
		if changeEpoch {
			c.epoch = keys.epoch
		}
		var prev [32]byte
		copy(prev[:], recs[6][frameHeaderSize+9:frameHeaderSize+41])
		copy(c.sig[:], ed25519.Sign(keys.cur, c.signedMessage(id, 6, prev)))
		rs := append([][]byte{}, recs...)
		rs[6] = withPayload(rs[6], c.marshal())
		kind := FindingBadSignature
		if changeEpoch {
			kind = FindingEpochGap
		}
		expectFailure(t, verifyBytes(t, rechain(t, join(rs)), tl.pin()), kind, 6, sp[6].off)
	}
}

// TestCurrentKeyCanOnlySealTheFuture shows the residual risk of the key
// file: its holder can seal a rewritten unsealed tail, but not history.
func TestCurrentKeyCanOnlySealTheFuture(t *testing.T) {
	tl, l, orig := openLogWithUnsealedTail(t)
	keys, err := readKeyFile(tl.setup.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	recs := records(t, orig)
	n := len(recs)
	id := logIDOf(t, orig)
	forge := func(rs [][]byte) []byte {
		b := rechain(t, join(rs))
		sp := spans(t, b)
		var head [32]byte
		copy(head[:], b[sp[len(sp)-1].off+sp[len(sp)-1].size-linkSize:])
		c := checkpoint{epoch: keys.epoch, time: time.Now().UnixNano(), nextPK: pub32(keys.next)}
		copy(c.sig[:], ed25519.Sign(keys.cur, c.signedMessage(id, uint64(len(sp)), head)))
		out, _ := newLinker().appendFrame(b, recCheckpoint, uint64(len(sp)), head, c.marshal())
		return out
	}
	rs := append([][]byte{}, recs...)
	rs[n-1] = withPayload(rs[n-1], sealFor(t, id, uint64(n-1), tl.setup.Recipient, Event{Type: EventSign, Run: "R99"}))
	if r := verifyBytes(t, forge(rs), tl.pin()); !r.OK || r.UnsealedEntries != 0 {
		t.Fatalf("the holder of the current key seals a rewritten tail: %s", describe(r))
	}
	// Rewriting a sealed entry breaks the checkpoint that covers it.
	rs = append([][]byte{}, recs...)
	rs[2] = withPayload(rs[2], sealFor(t, id, 2, tl.setup.Recipient, Event{Type: EventSign, Run: "R99"}))
	r := verifyBytes(t, forge(rs), tl.pin())
	if r.OK || r.Failure.Kind != FindingBadSignature {
		t.Fatalf("sealed history rewritten with the current key: %s", describe(r))
	}
}

func TestCheckpointTimeBackwards(t *testing.T) {
	tl := newTestSetup(t)
	keys, err := readKeyFile(tl.setup.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	created := time.Date(2026, 7, 22, 14, 0, 0, 0, time.UTC)
	h := header{version: version2, logID: [16]byte{1, 2, 3}, created: created.UnixNano(), pk0: [32]byte(tl.setup.PK0), recipient: tl.setup.Recipient}
	lk := newLinker()
	b, head := lk.appendFrame(nil, recHeader, 0, [32]byte{}, h.marshal())
	build := func(ts time.Time) []byte {
		c := checkpoint{version: version2, epoch: 0, time: ts.UnixNano(), nextPK: pub32(keys.next)}
		copy(c.sig[:], ed25519.Sign(keys.cur, c.signedMessage(h.logID, 1, head)))
		out, _ := lk.appendFrame(bytes.Clone(b), recCheckpoint, 1, head, c.marshal())
		return out
	}
	if r := verifyBytes(t, build(created.Add(time.Second)), tl.pin()); !r.OK {
		t.Fatalf("forward time: %s", describe(r))
	}
	expectFailure(t, verifyBytes(t, build(created.Add(-time.Hour)), tl.pin()), FindingTimeBackwards, 1, -1)
}

// TestTornTail cuts and pads the end of a sealed log of each version. In
// a version 1 file zero bytes after the records are what a crash leaves (a
// torn tail, counted to the end of the file); in version 2 segments they
// are the free space the writer pre-allocated, and a torn write is counted
// to its last non-zero byte.
func TestTornTail(t *testing.T) {
	_, v2 := sealedLogNotEndingInZero(t)
	v1, _, _ := v1Fixture(t)
	for _, tc := range []struct {
		name string
		orig []byte
	}{{"version 2", v2}, {"version 1", v1}} {
		t.Run(tc.name, func(t *testing.T) { tornTail(t, tc.orig) })
	}
}

func tornTail(t *testing.T, orig []byte) {
	sp := spans(t, orig)
	last := sp[len(sp)-1]
	prealloc := verifyBytes(t, orig, VerifyOptions{}).Version == int(version2)
	check := func(t *testing.T, b []byte, off int64) {
		t.Helper()
		r := verifyBytes(t, b, VerifyOptions{})
		if !r.OK || r.Torn == nil || r.Torn.Offset != off || len(r.Warnings) == 0 {
			t.Fatalf("torn tail: %s torn=%+v warnings=%v", describe(r), r.Torn, r.Warnings)
		}
		// An input cut inside the record counts to its end; where the
		// record's whole length is there, a pre-allocated segment's zero
		// fill at the end is not counted.
		want := int64(len(b)) - off
		whole := slices.ContainsFunc(sp, func(s span) bool { return s.off == off && s.off+s.size == int64(len(b)) })
		if prealloc && whole {
			want = int64(len(bytes.TrimRight(b, "\x00"))) - off
		}
		if r.Torn.Bytes != want {
			t.Fatalf("torn bytes %d, want %d", r.Torn.Bytes, want)
		}
	}
	t.Run("cut inside the body", func(t *testing.T) { check(t, orig[:len(orig)-7], last.off) })
	t.Run("cut inside the length", func(t *testing.T) { check(t, orig[:last.off+3], last.off) })
	t.Run("zero bytes after the end", func(t *testing.T) {
		b := append(bytes.Clone(orig), make([]byte, 1000)...)
		if !prealloc {
			check(t, b, int64(len(orig)))
			return
		}
		if r := verifyBytes(t, b, VerifyOptions{}); !r.OK || r.Torn != nil || r.Bytes != int64(len(orig)) {
			t.Fatalf("free space after the records: %s torn=%+v bytes=%d", describe(r), r.Torn, r.Bytes)
		}
	})
	t.Run("zero-filled from a block boundary", func(t *testing.T) {
		// Find a record with a 512-byte boundary past its length field.
		for _, s := range sp[1:] {
			a := (s.off + frameHeaderSize + tornAlign) / tornAlign * tornAlign
			if a < s.off+s.size {
				b := bytes.Clone(orig[:s.off+s.size])
				clear(b[a:])
				check(t, b, s.off)
				return
			}
		}
		t.Fatal("no record crosses a block boundary: the log written above tests nothing here")
	})
	t.Run("zero bytes not on a block boundary are damage", func(t *testing.T) {
		b := bytes.Clone(orig)
		clear(b[len(b)-40 : len(b)-10])
		r := verifyBytes(t, b, VerifyOptions{})
		expectFailure(t, r, FindingLinkMismatch, last.seq, last.off)
	})
	t.Run("junk after the end is damage", func(t *testing.T) {
		b := append(bytes.Clone(orig), "0123456789abcdef"...)
		expectFailure(t, verifyBytes(t, b, VerifyOptions{}), FindingBadLength, last.seq+1, int64(len(orig)))
	})
	t.Run("empty", func(t *testing.T) {
		expectFailure(t, verifyBytes(t, nil, VerifyOptions{}), FindingNoHeader, 0, 0)
	})
	t.Run("torn header only", func(t *testing.T) {
		expectFailure(t, verifyBytes(t, orig[:20], VerifyOptions{}), FindingNoHeader, 0, 0)
	})
}

func TestReopenAfterTornTail(t *testing.T) {
	// A crash while the last entry was being written: snapshot the log and
	// the key file of a log that is still open, and tear its last record.
	tl, l0, orig := openLogWithUnsealedTail(t)
	key, err := os.ReadFile(tl.setup.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	l0.Close()
	cut := orig[:len(orig)-7]
	if err := atomicfile.Write(tl.path, cut, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.Write(tl.setup.KeyFile, key, 0o600); err != nil {
		t.Fatal(err)
	}
	sp := spans(t, orig)
	last := sp[len(sp)-1]
	if r := verifyBytes(t, cut, tl.pin()); !r.OK || r.Torn == nil {
		t.Fatalf("torn: %s", describe(r))
	}
	l := tl.open(t)
	mustAppend(t, l, ev(EventSign, "R40"))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	b := tl.bytes(t)
	r := verifyBytes(t, b, tl.pin())
	if !r.OK || r.Torn != nil || r.UnsealedEntries != 0 {
		t.Fatalf("after recovery: %s torn=%v", describe(r), r.Torn)
	}
	side, err := os.ReadFile(tl.path + ".torn-" + strconv.FormatInt(last.off, 10))
	if err != nil || !bytes.Equal(side, orig[last.off:len(orig)-7]) {
		t.Fatalf("torn bytes not saved: %v", err)
	}
	evs, err := ReadEvents(tl.path, tl.setup.Identity)
	if err != nil {
		t.Fatal(err)
	}
	var rec *Event
	for i := range evs {
		if evs[i].Type == EventLogRecovered {
			rec = &evs[i]
		}
	}
	if rec == nil || rec.Detail["offset"] != strconv.FormatInt(last.off, 10) || rec.Detail["bytes"] != strconv.FormatInt(last.size-7, 10) {
		t.Fatalf("recovery not recorded: %+v", rec)
	}
	if evs[len(evs)-2].Run != "R40" {
		t.Fatalf("append after recovery missing: %+v", evs[len(evs)-2])
	}
}

func TestReopenAfterTornHeader(t *testing.T) {
	_, orig := sealedLog(t)
	// A crash while a log was being created: only part of its header reached
	// the disk, and the key file never moved on.
	tl := newTestSetup(t)
	if err := atomicfile.Write(tl.path, orig[:30], 0o600); err != nil {
		t.Fatal(err)
	}
	l := tl.open(t)
	mustAppend(t, l, ev(EventSign, "R1"))
	l.Close()
	r := tl.verify(t)
	if !r.OK || r.Entries != 2 { // the recovery entry and R1
		t.Fatalf("after torn header: %s entries=%d", describe(r), r.Entries)
	}
}

// TestEveryByteFlipIsDetected flips each byte of a sealed log in turn: each
// flip must fail verification at the record that holds the byte.
//
// The log's last link must not end in a zero byte. In a pre-allocated
// segment, where zeros follow the records, such a record with a byte changed
// cannot be told from one a crash cut short before its last bytes
// (TestLastRecordEndingInZeroCanReadAsTorn); about one log in 256 ends so.
func TestEveryByteFlipIsDetected(t *testing.T) {
	_, orig := sealedLogNotEndingInZero(t)
	sp := spans(t, orig)
	rec := 0
	for i := range orig {
		for int64(i) >= sp[rec].off+sp[rec].size {
			rec++
		}
		b := bytes.Clone(orig)
		flip(b, int64(i))
		r := verifyBytes(t, b, VerifyOptions{})
		if r.OK || r.Failure.Seq != uint64(rec) || r.Failure.Offset != sp[rec].off {
			t.Fatalf("flip at byte %d (record %d): %s torn=%v", i, rec, describe(r), r.Torn)
		}
	}
}

// TestLastRecordEndingInZeroCanReadAsTorn shows the limit of the check
// above: when the last record's link ends in a zero byte, a changed byte in
// that record reads as a crash that cut the record short, not as damage.
// Verify still fails no earlier record and still says it cannot prove that
// nothing was cut from the end: the change removes the last record, which
// cutting the file can do too.
func TestLastRecordEndingInZeroCanReadAsTorn(t *testing.T) {
	orig := sealedLogEndingInZero(t)
	sp := spans(t, orig)
	last := sp[len(sp)-1]
	if last.typ != recCheckpoint || orig[len(orig)-1] != 0 {
		t.Fatalf("the log ends in a record of type %d, last byte %d", last.typ, orig[len(orig)-1])
	}
	b := bytes.Clone(orig)
	flip(b, last.off+frameHeaderSize+bodyFixedSize)
	r := verifyBytes(t, b, VerifyOptions{})
	if !r.OK || r.Torn == nil || r.Torn.Offset != last.off || r.Records != uint64(len(sp)-1) {
		t.Fatalf("flip in a last record ending in zero: %s torn=%+v records=%d", describe(r), r.Torn, r.Records)
	}
	if !strings.Contains(strings.Join(r.CannotProve, "\n"), "cut from the end") {
		t.Fatalf("cannot prove: %q", r.CannotProve)
	}
}

// TestEveryPrefixIsACrash cuts a sealed log at every byte: a cut is never
// reported as damage, only as a torn tail (or, inside the header, as a log
// without one). It cuts a header whose link ends in a zero byte too, as
// one log in 256 has: cutting that byte and padding with zeros gives the
// header back whole.
func TestEveryPrefixIsACrash(t *testing.T) {
	_, orig := sealedLog(t)
	cutEverywhere(t, orig)
	v1, _, _ := v1Fixture(t)
	cutEverywhere(t, v1)
	hdr := orig[:spans(t, orig)[0].size]
	cutEverywhere(t, withLinkEndingInZero(t, hdr))
}

// cutEverywhere cuts log at every byte, with and without zeros after the
// cut.
func cutEverywhere(t *testing.T, log []byte) {
	t.Helper()
	sp := spans(t, log)
	for n := 0; n <= len(log); n++ {
		for _, zeros := range []int{0, 700} {
			b := append(bytes.Clone(log[:n]), make([]byte, zeros)...)
			r := verifyBytes(t, b, VerifyOptions{})
			// Zeros after the cut that repeat the zero bytes the cut
			// removed give those bytes back.
			kept := n
			for kept < len(log) && kept-n < zeros && log[kept] == 0 {
				kept++
			}
			if int64(kept) < sp[0].size {
				if r.OK || r.Failure.Kind != FindingNoHeader {
					t.Fatalf("cut at %d (+%d zeros) inside the header: %s", n, zeros, describe(r))
				}
				continue
			}
			if !r.OK {
				t.Fatalf("cut at %d (+%d zeros): %s", n, zeros, describe(r))
			}
			// Every byte is a record, a torn tail or, in a version 2
			// segment, zero free space after them.
			end := r.Bytes
			if r.Torn != nil {
				end = r.Torn.Offset + r.Torn.Bytes
			}
			rest := b[end:]
			if r.Version == int(version2) {
				rest = bytes.TrimLeft(rest, "\x00")
			}
			if len(rest) > 0 {
				t.Fatalf("cut at %d (+%d zeros): %d bytes unaccounted for", n, zeros, len(rest))
			}
		}
	}
}

// withLinkEndingInZero changes the creation time of the header record hdr
// until its link ends in a zero byte.
func withLinkEndingInZero(t *testing.T, hdr []byte) []byte {
	t.Helper()
	created := frameHeaderSize + bodyFixedSize + len(headerMagic) + 16
	hdr = bytes.Clone(hdr)
	for i := uint64(0); ; i++ {
		binary.BigEndian.PutUint64(hdr[created:], i)
		hdr = rechain(t, hdr)
		if hdr[len(hdr)-1] == 0 {
			return hdr
		}
	}
}
