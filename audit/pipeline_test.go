package audit

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"testing"
)

// pipelineLog writes n entries, a checkpoint every 100, into the log's
// first file (small enough for one segment), and returns its records.
func pipelineLog(t *testing.T, n int) (*testLog, [][]byte) {
	tl := newTestSetup(t)
	tl.cfg.CheckpointEvery = 100
	l := tl.open(t)
	for i := 0; i < n; i++ {
		e := ev(EventSign, "R"+strconv.Itoa(i%7))
		e.Detail = map[string]string{"i": strconv.Itoa(i)}
		mustAppend(t, l, e)
	}
	l.Close()
	recs := records(t, tl.bytes(t))
	if len(recs) < n {
		t.Fatalf("%d records for %d entries: the log outgrew its first file", len(recs), n)
	}
	return tl, recs
}

// forgeEntry changes the ciphertext of an entry far into the log and
// recomputes the chain after it: the entry verifies as a record, and does
// not decrypt. It returns the entry's seq and the log.
func forgeEntry(t *testing.T, recs [][]byte) (uint64, []byte) {
	bad := 0
	for k := len(recs) * 2 / 3; ; k++ {
		if recs[k][frameHeaderSize] == recEntry {
			bad = k
			break
		}
	}
	forged := make([][]byte, len(recs))
	copy(forged, recs)
	forged[bad] = bytes.Clone(recs[bad])
	forged[bad][len(forged[bad])-linkSize-1] ^= 1
	return uint64(bad), rechain(t, join(forged))
}

// TestReadInBatches: a read of many batches passes every record once, in
// log order; an error of the caller's stops it at once; an entry that
// does not decrypt ends it after exactly the events before it, as a serial
// read does.
func TestReadInBatches(t *testing.T) {
	const n = 1200
	tl, recs := pipelineLog(t, n)
	read := func(b []byte, stopAt int) ([]Event, error) {
		var got []Event
		_, err := DecodeEvents(bytes.NewReader(b), tl.setup.Identity, VerifyOptions{}, func(e Event) error {
			if len(got) == stopAt {
				return errors.New("enough")
			}
			got = append(got, e)
			return nil
		})
		return got, err
	}
	all, err := read(join(recs), -1)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(recs)-1 {
		t.Fatalf("%d events from %d records (header aside)", len(all), len(recs))
	}
	entries := 0
	for k, e := range all {
		if e.Seq != uint64(k+1) {
			t.Fatalf("event %d has seq %d: out of order", k, e.Seq)
		}
		if e.Type == EventSign {
			if e.Detail["i"] != strconv.Itoa(entries) {
				t.Fatalf("entry %d carries i=%s", entries, e.Detail["i"])
			}
			entries++
		}
	}
	if entries != n {
		t.Fatalf("%d entries of %d", entries, n)
	}

	got, err := read(join(recs), 700)
	if err == nil || err.Error() != "enough" || len(got) != 700 {
		t.Fatalf("stopped at 700: %d events, error %v", len(got), err)
	}

	bad, forged := forgeEntry(t, recs)
	got, err = read(forged, -1)
	want := fmt.Sprintf("audit entry seq %d: ", bad)
	if err == nil || !bytes.HasPrefix([]byte(err.Error()), []byte(want)) {
		t.Fatalf("forged entry seq %d: error %v", bad, err)
	}
	if uint64(len(got)) != bad-1 || got[len(got)-1].Seq != bad-1 {
		t.Fatalf("forged entry seq %d: %d events passed, the last seq %d", bad, len(got), got[len(got)-1].Seq)
	}
}
