package audit

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// testClock is a deterministic clock for logs under test.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newTestClock() *testClock {
	return &testClock{t: time.Date(2026, 7, 22, 14, 20, 0, 0, time.UTC)}
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

type testLog struct {
	dir   string
	path  string
	setup Setup
	cfg   Config
}

// newTestSetup makes a setup in a fresh directory.
func newTestSetup(t testing.TB) *testLog {
	t.Helper()
	dir := t.TempDir()
	s, err := NewSetup(filepath.Join(dir, "state"))
	if err != nil {
		t.Fatal(err)
	}
	tl := &testLog{dir: dir, path: filepath.Join(dir, "state", "audit.log"), setup: s}
	tl.cfg = s.Config(tl.path)
	tl.cfg.Now = newTestClock().Now
	tl.cfg.CheckpointInterval = -1
	return tl
}

func (tl *testLog) open(t testing.TB) *Log {
	t.Helper()
	l, err := Open(tl.cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// bytes returns the log's first file without the free space after its
// records (a pre-allocated segment is mostly zeros); a file that fails
// verification is returned whole.
func (tl *testLog) bytes(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile(tl.path)
	if err != nil {
		t.Fatal(err)
	}
	return dataOf(t, b)
}

func dataOf(t testing.TB, b []byte) []byte {
	r, err := Verify(bytes.NewReader(b), VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK || r.Version != int(version2) {
		return b
	}
	end := r.Bytes
	if r.Torn != nil {
		end = r.Torn.Offset + r.Torn.Bytes
	}
	return b[:end]
}

func (tl *testLog) pin() VerifyOptions { return VerifyOptions{PK0: tl.setup.PK0} }

// verify verifies the whole log on disk, every segment, pinned.
func (tl *testLog) verify(t testing.TB) *Report {
	t.Helper()
	r, err := VerifyPath(tl.path, tl.pin())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func mustAppend(t testing.TB, l *Log, e Event) {
	t.Helper()
	if err := l.Append(e); err != nil {
		t.Fatal(err)
	}
}

func ev(typ EventType, run string) Event {
	return Event{Type: typ, Run: run, BootID: "B8", VaultEpoch: 17}
}

// span locates one record in a log file.
type span struct {
	off, size int64
	typ       byte
	seq       uint64
}

// spans splits well-formed log bytes into records (no verification).
func spans(t testing.TB, b []byte) []span {
	t.Helper()
	var out []span
	for off := 0; off < len(b); {
		if len(b)-off < frameHeaderSize {
			t.Fatalf("spans: short frame at %d", off)
		}
		n := int(binary.BigEndian.Uint32(b[off:]))
		size := frameHeaderSize + n + linkSize
		if off+size > len(b) {
			t.Fatalf("spans: frame at %d runs past the end", off)
		}
		body := b[off+frameHeaderSize:]
		out = append(out, span{off: int64(off), size: int64(size), typ: body[0], seq: binary.BigEndian.Uint64(body[1:9])})
		off += size
	}
	return out
}

// rechain renumbers every record from index `from` on to its position and
// recomputes prev and link, as an attacker without keys can.
func rechain(t testing.TB, b []byte) []byte {
	t.Helper()
	lk := newLinker()
	var out []byte
	var prev [32]byte
	for i, s := range spans(t, b) {
		body := b[s.off+frameHeaderSize : s.off+s.size-linkSize]
		payload := body[bodyFixedSize:]
		out, prev = lk.appendFrame(out, body[0], uint64(i), prev, payload)
	}
	return out
}

// records returns the records of b as separate byte slices.
func records(t testing.TB, b []byte) [][]byte {
	var out [][]byte
	for _, s := range spans(t, b) {
		out = append(out, append([]byte(nil), b[s.off:s.off+s.size]...))
	}
	return out
}

func join(recs [][]byte) []byte { return bytes.Join(recs, nil) }

// payloadOf returns the payload of a single record.
func payloadOf(rec []byte) []byte {
	return rec[frameHeaderSize+bodyFixedSize : len(rec)-linkSize]
}

func verifyBytes(t testing.TB, b []byte, opts VerifyOptions) *Report {
	t.Helper()
	r, err := Verify(bytes.NewReader(b), opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func expectFailure(t testing.TB, r *Report, kind FindingKind, seq uint64, off int64) {
	t.Helper()
	if r.OK || r.Failure == nil {
		t.Fatalf("verify passed, want %s at seq %d; report: %+v", kind, seq, r)
	}
	f := r.Failure
	if f.Kind != kind || f.Seq != seq || (off >= 0 && f.Offset != off) {
		t.Fatalf("failure %s at seq %d offset %d (%s), want %s at seq %d offset %d", f.Kind, f.Seq, f.Offset, f.Message, kind, seq, off)
	}
}

func describe(r *Report) string {
	if r.Failure != nil {
		return fmt.Sprintf("%s at seq %d: %s", r.Failure.Kind, r.Failure.Seq, r.Failure.Message)
	}
	return "ok"
}
