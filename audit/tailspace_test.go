package audit

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// The writer moves to the next segment when a write does not fit, so a
// segment may end in fewer free bytes than a record's length field: they
// are free space like any other zeros after the records, not a length
// field a crash cut short. Each case fills the first segment with
// records whose sizes leave exactly that many bytes.
func TestFewFreeBytesEndASegment(t *testing.T) {
	for _, free := range []int64{0, 1, frameHeaderSize - 1, frameHeaderSize, frameHeaderSize + 1, 40} {
		t.Run(strconv.FormatInt(free, 10), func(t *testing.T) {
			tl := newTestSetup(t)
			tl.cfg.SegmentSize = minSegmentSize
			tl.cfg.CheckpointEvery = -1
			tl.cfg.CheckpointInterval = -1
			l := tl.open(t)
			n := 0
			// An entry is stored padded: 389 bytes here, and 256 more for
			// each extra step of padding (extra); this pad is in the
			// middle of its step.
			entry := func(extra int64, seg int) {
				pad := 0
				if extra > 0 {
					pad = int(256*extra - 13)
				}
				e := ev(EventSign, "R1")
				e.Detail = map[string]string{"pad": strings.Repeat("p", pad)}
				before := l.w.seg.off
				if seg > 0 {
					before = 0
				}
				mustAppend(t, l, e)
				n++
				if got := l.w.seg.off - before; got != 389+256*extra || l.w.seg.index != seg {
					t.Fatalf("an entry padded %d steps: %d bytes in segment %d, want %d in segment %d", extra, got, l.w.seg.index, 389+256*extra, seg)
				}
			}
			// fill = 389 e + 256 m: e entries (389 e ≡ fill mod 256), and m
			// steps of padding among them.
			fill := segmentSize(minSegmentSize, 0) - l.w.seg.off - free
			e := int64(1)
			for (fill-389*e)%256 != 0 {
				e++
			}
			for m := (fill - 389*e) / 256; e > 0; e-- {
				extra := min(m, 200)
				if e == 1 {
					extra = m
				}
				entry(extra, 0)
				m -= extra
			}
			if left := segmentSize(minSegmentSize, 0) - l.w.seg.off; left != free {
				t.Fatalf("the first segment has %d bytes free, want %d", left, free)
			}
			entry(0, 1) // in the next segment
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if r := tl.verify(t); !r.OK || r.Entries != uint64(n) || r.Segments != 2 {
				t.Fatalf("verify with %d bytes free at the end of the first segment: %s, %d entries of %d, %d segments", free, describe(r), r.Entries, n, r.Segments)
			}
			read := 0
			if _, err := ReadLog(tl.path, tl.setup.Identity, ReadOptions{VerifyOptions: tl.pin()}, func(e Event) error {
				if e.Type == EventSign {
					read++
				}
				return nil
			}); err != nil || read != n {
				t.Fatalf("read %d events of %d: %v", read, n, err)
			}
			// A writer opens it and goes on.
			l = tl.open(t)
			mustAppend(t, l, ev(EventGatewayStarted, ""))
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			// A byte in those few is no free space.
			if free > 0 {
				f, err := os.OpenFile(tl.path, os.O_RDWR, 0)
				if err != nil {
					t.Fatal(err)
				}
				_, err = f.WriteAt([]byte{0x5a}, segmentSize(minSegmentSize, 0)-1)
				f.Close()
				if err != nil {
					t.Fatal(err)
				}
				if r := tl.verify(t); r.OK {
					t.Fatalf("a byte in the %d free bytes at the end of the first segment: verified", free)
				}
			}
		})
	}
}
