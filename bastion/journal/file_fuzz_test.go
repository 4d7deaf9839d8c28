package journal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/fnv"
	"os"
	"path/filepath"
	"testing"
	"time"
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

// FuzzOpenFile opens a journal file written by someone else: whatever
// it holds, OpenReadOnly and Open return within their bounds, and a
// file Open refuses is left as it was. An input shorter than two pages
// is a list of changes to a real journal (each a little-endian offset
// in units of 8 bytes, and 8 bytes to write there), which the fuzzer
// searches far faster than whole files.
func FuzzOpenFile(f *testing.F) {
	ps := os.Getpagesize()
	dir := f.TempDir()
	path := filepath.Join(dir, "journal.db")
	j, err := Open(path, "inst")
	if err != nil {
		f.Fatal(err)
	}
	for _, cmd := range []string{"make deploy", "ls"} {
		e := mustStart(f, j, newEntry(cmd))
		j.Dispatched(e.ID)
		if _, err := j.MarkUnknown(e.ID, Unknown{Reason: ReasonUpstreamLost}); err != nil {
			f.Fatal(err)
		}
	}
	j.Close()
	good, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
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
	f.Fuzz(func(t *testing.T, data []byte) {
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
