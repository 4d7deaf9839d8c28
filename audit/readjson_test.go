package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"
)

// appendStored appends an entry whose stored JSON is js, as no writer of
// this package would store it: a log that verifies, whose entry holds
// what its author sealed.
func appendStored(t *testing.T, l *Log, js string) {
	t.Helper()
	e := Event{Type: EventSign}
	it, cp, _, err := l.reserve(&e)
	if err != nil {
		t.Fatal(err)
	}
	l.commit(it, cp, []byte(js))
	if err := <-it.done; err != nil {
		t.Fatal(err)
	}
}

// readBoth reads the log with ReadLog and with ReadLogJSON.
func readBoth(t *testing.T, path string, id [32]byte, opts ReadOptions) ([]Event, [][]byte, error, error) {
	t.Helper()
	var evs []Event
	rep, err := ReadLog(path, id, opts, func(e Event) error { evs = append(evs, e); return nil })
	if err == nil {
		err = rep.Err()
	}
	var jss [][]byte
	rep, jerr := ReadLogJSON(path, id, opts, func(js []byte) error { jss = append(jss, bytes.Clone(js)); return nil })
	if jerr == nil {
		jerr = rep.Err()
	}
	return evs, jss, err, jerr
}

// TestReadLogJSON: ReadLogJSON passes, for every event, the JSON
// AppendEventJSON writes for the event ReadLog passes: byte for byte for
// what the writer stores (the stored JSON passed on, its seq added), and
// decoding to the same event for what it does not (fields in another
// order, escapes, a field this version does not know, a seq in the stored
// JSON, which the record's own seq overrides), in a whole read and in
// reads that seek.
func TestReadLogJSON(t *testing.T) {
	tl := newTestSetup(t)
	tl.cfg.CheckpointEvery = 5
	l := tl.open(t)
	seeds := jsonSeeds(t)
	odd := map[int]bool{}
	for i := range 40 {
		e := ev(EventSign, "R"+strconv.Itoa(i%3))
		e.Time = time.Date(2026, 11, 30, 14, 0, i, 0, time.UTC)
		e.Detail = map[string]string{"i": strconv.Itoa(i)}
		switch i % 8 {
		case 1:
			json.Unmarshal(seeds[0], &e) // every field
			e.Seq = 0
		case 3:
			json.Unmarshal(seeds[3], &e) // escapes
			e.Seq = 0
		case 5:
			appendStored(t, l, `{"time":"2026-11-30T14:23:06Z","type":"sign","run":"R1"}`)
			odd[i] = true
			continue
		case 6:
			appendStored(t, l, `{"seq":999,"type":"sign","time":"2026-11-30T14:23:06Z","run":"R2"}`)
			odd[i] = true
			continue
		case 7:
			appendStored(t, l, `{"type":"sign","time":"2026-11-30T14:23:06Z","run":"R0","later":{"x":[1]}}`)
			odd[i] = true
			continue
		}
		mustAppend(t, l, e)
	}
	l.Close()
	for _, opts := range []ReadOptions{{}, {Run: "R1"}, {Since: time.Date(2026, 11, 30, 14, 0, 30, 0, time.UTC)}} {
		evs, jss, err, jerr := readBoth(t, tl.path, tl.setup.Identity, opts)
		if err != nil || jerr != nil {
			t.Fatalf("%+v: ReadLog: %v; ReadLogJSON: %v", opts, err, jerr)
		}
		if len(evs) != len(jss) || len(evs) < 10 {
			t.Fatalf("%+v: ReadLog passed %d events, ReadLogJSON %d", opts, len(evs), len(jss))
		}
		for k := range evs {
			want, err := AppendEventJSON(nil, &evs[k])
			if err != nil {
				t.Fatal(err)
			}
			var got Event
			if err := DecodeEventJSON(jss[k], &got); err != nil {
				t.Fatalf("%+v: event seq %d: %s: %v", opts, evs[k].Seq, jss[k], err)
			}
			if !reflect.DeepEqual(got, evs[k]) {
				t.Errorf("%+v: ReadLogJSON passed\n%s\nfor\n%s", opts, jss[k], want)
			}
			if evs[k].Detail["i"] != "" && !bytes.Equal(jss[k], want) {
				t.Errorf("%+v: an event the writer stored passed as\n%s\nnot as AppendEventJSON writes it\n%s", opts, jss[k], want)
			}
		}
	}
	if len(odd) == 0 {
		t.Fatal("no entry stored otherwise than the writer stores")
	}
}

// TestReadLogJSONStopsAtABadEntry: an entry that decrypts to something
// other than an event, and one that does not decrypt, end ReadLogJSON
// with the entry's error after exactly the events before it, as ReadLog.
func TestReadLogJSONStopsAtABadEntry(t *testing.T) {
	for _, stored := range []string{`{"type":"sign","time":"yesterday"}`, `{"type":"sign"`, `[]`, "{\"type\":\"sign\"}\n{\"seq\":1}"} {
		tl := newTestSetup(t)
		l := tl.open(t)
		for i := range 700 {
			if i == 600 {
				appendStored(t, l, stored)
				continue
			}
			mustAppend(t, l, ev(EventSign, "R1"))
		}
		l.Close()
		evs, jss, err, jerr := readBoth(t, tl.path, tl.setup.Identity, ReadOptions{})
		if err == nil || jerr == nil || err.Error() != jerr.Error() || !bytes.Contains([]byte(jerr.Error()), []byte("decode event")) {
			t.Fatalf("%q: ReadLog error %v, ReadLogJSON error %v", stored, err, jerr)
		}
		if len(jss) != len(evs) || len(jss) == 0 {
			t.Fatalf("%q: ReadLog passed %d events before its error, ReadLogJSON %d", stored, len(evs), len(jss))
		}
	}

	tl, recs := pipelineLog(t, 1200)
	bad, forged := forgeEntry(t, recs)
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, forged, 0o600); err != nil {
		t.Fatal(err)
	}
	var last []byte
	n := 0
	_, err := ReadLogJSON(path, tl.setup.Identity, ReadOptions{}, func(js []byte) error { n++; last = bytes.Clone(js); return nil })
	if want := fmt.Sprintf("audit entry seq %d: ", bad); err == nil || !bytes.HasPrefix([]byte(err.Error()), []byte(want)) {
		t.Fatalf("forged entry seq %d: error %v", bad, err)
	}
	var e Event
	if DecodeEventJSON(last, &e); uint64(n) != bad-1 || e.Seq != bad-1 {
		t.Fatalf("forged entry seq %d: %d events passed, the last seq %d", bad, n, e.Seq)
	}

	stop := errors.New("enough")
	n = 0
	_, err = ReadLogJSON(path, tl.setup.Identity, ReadOptions{}, func([]byte) error {
		if n == 700 {
			return stop
		}
		n++
		return nil
	})
	if !errors.Is(err, stop) || n != 700 {
		t.Fatalf("stopped at 700: %d events, error %v", n, err)
	}
}
