package journal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/fnv"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// sealMeta gives bbolt's two meta pages of a journal file of page size
// ps the checksums their contents call for, as a program that writes the
// file on purpose can: damage is then found past the meta pages.
func sealMeta(b []byte, ps int) {
	const start, end = 16, 16 + 56 // the meta after the page header, up to its checksum
	for off := 0; off <= ps && off+end+8 <= len(b); off += ps {
		h := fnv.New64a()
		h.Write(b[off+start : off+end])
		binary.LittleEndian.PutUint64(b[off+end:], h.Sum64())
	}
}

// goodJournal returns the bytes of a sound journal of two entries.
func goodJournal(tb testing.TB) []byte {
	path := filepath.Join(tb.TempDir(), "journal.db")
	j, err := Open(path, "inst")
	if err != nil {
		tb.Fatal(err)
	}
	for _, cmd := range []string{"make deploy", "ls"} {
		e := mustStart(tb, j, newEntry(cmd))
		j.Dispatched(e.ID)
		if _, err := j.MarkUnknown(e.ID, Unknown{Reason: ReasonUpstreamLost}); err != nil {
			tb.Fatal(err)
		}
	}
	j.Close()
	good, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return good
}

// fuzzJournal returns a real journal's file, of two lost commands, and
// seeds f with it, variants of it, and changes to it (see fuzzedJournal).
func fuzzJournal(f *testing.F) []byte {
	ps := os.Getpagesize()
	good := goodJournal(f)
	f.Add(good)
	// A high water mark far past the file's end.
	far := bytes.Clone(good)
	for off := 0; off <= ps; off += ps {
		binary.LittleEndian.PutUint64(far[off+16+40:], 1<<40)
	}
	f.Add(far)
	f.Add(good[:2*ps])
	edit := func(at uint16, v uint64) []byte {
		return binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint16(nil, at), v)
	}
	root := binary.LittleEndian.Uint64(good[ps+16+16:]) // meta 1's root page
	f.Add(edit(uint16(int(root)*ps/8+1), 0x0001_0001))  // the root page made a branch of one element
	f.Add(append(edit(uint16(int(root)*ps/8+1), 0x0001_0001), edit(uint16(int(root)*ps/8+3), root)...))
	f.Add(edit(uint16(int(root)*ps/8+1), 0xffff_ffff_0002_0002))
	return good
}

// fuzzedJournal is the journal file an input stands for: the input
// itself when it is two pages or more, else good with the input's
// changes (each a little-endian offset in units of 8 bytes, and 8
// bytes to write there), which the fuzzer searches far faster than
// whole files; its meta checksums made good.
func fuzzedJournal(good, data []byte) []byte {
	ps := os.Getpagesize()
	if len(data) < 2*ps {
		changes := data
		data = bytes.Clone(good)
		for ; len(changes) >= 10; changes = changes[10:] {
			at := int(binary.LittleEndian.Uint16(changes)) * 8 % (len(data) - 7)
			copy(data[at:], changes[2:10])
		}
	} else {
		data = bytes.Clone(data)
	}
	sealMeta(data, ps)
	return data
}

// FuzzOpenFile opens a journal file written by someone else (see
// fuzzedJournal): whatever it holds, OpenReadOnly and Open return within
// their bounds, and a file Open refuses is left as it was.
func FuzzOpenFile(f *testing.F) {
	good := fuzzJournal(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		data = fuzzedJournal(good, data)
		path := filepath.Join(t.TempDir(), "journal.db")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		type result struct {
			j   *Journal
			err error
		}
		within := func(what string, open func() (*Journal, error)) result {
			done := make(chan result, 1)
			go func() {
				j, err := open()
				done <- result{j, err}
			}()
			select {
			case r := <-done:
				return r
			case <-time.After(20 * time.Second):
				t.Fatalf("%s has not returned in 20s", what)
				return result{}
			}
		}
		if r := within("OpenReadOnly", func() (*Journal, error) { return openReadOnly(path, time.Second) }); r.err == nil {
			if _, err := r.j.List(ListOptions{}); err != nil && !errors.Is(err, ErrDamaged) {
				t.Fatalf("a journal opened read-only and cannot be listed: %v", err)
			}
			r.j.Close()
		}
		r := within("Open", func() (*Journal, error) { return open(path, "inst", options{timeout: time.Second, noSync: true}) })
		if r.err == nil {
			if _, err := r.j.List(ListOptions{}); err != nil && !errors.Is(err, ErrDamaged) {
				t.Fatalf("a journal opened and cannot be listed: %v", err)
			}
			r.j.Close()
			return
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(after, data) {
			t.Fatalf("a journal refused (%v) was changed", r.err)
		}
	})
}

// FuzzPageGraph checks a journal file's page tree (see fuzzedJournal)
// as every open does, then reads what it accepted as the journal reads
// it, every bucket and nested bucket, and runs bbolt's own check: once
// the tree is accepted, nothing bbolt does with it may end the process
// (a panic or a fault is caught, and said damage, by the journal) or
// run without end.
func FuzzPageGraph(f *testing.F) {
	good := fuzzJournal(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "journal.db")
		if err := os.WriteFile(path, fuzzedJournal(good, data), 0o600); err != nil {
			t.Fatal(err)
		}
		db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
		if err != nil {
			return
		}
		defer db.Close()
		if walkPages(path) != nil {
			return
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
			defer func() { recover() }()
			db.View(func(tx *bolt.Tx) error {
				tx.ForEach(func(_ []byte, b *bolt.Bucket) error {
					return walk(b, func(k, v []byte) error { return nil })
				})
				for range tx.Check() {
				}
				return nil
			})
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatal("reading an accepted journal has not ended in 20s")
		}
	})
}
