package journal

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// sparseHuge writes the journal file b with its meta pages naming every
// page of 1 TiB, and makes the file that size, sparse (on any file system
// of the tests), as a program of the user's can; it returns its path.
func sparseHuge(t *testing.T, b []byte) string {
	t.Helper()
	const size = 1 << 40
	ps := os.Getpagesize()
	for off := 0; off <= ps; off += ps {
		binary.LittleEndian.PutUint64(b[off+16+40:], size/uint64(ps))
	}
	sealMeta(b, ps)
	path := filepath.Join(t.TempDir(), "journal.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, size); err != nil {
		t.Fatalf("making the file sparse: %v", err)
	}
	return path
}

// A journal file made sparse and huge, its meta pages naming every page
// of it (a program of the user's can make one in a moment, with no disk
// to spare), is damage, found at its open: the pages it names are
// neither in its page tree nor free. Finding that costs memory for the
// pages the tree reaches, not for the pages the file claims (a byte for
// each page of a 16 TiB file would be 4 GiB, which a gateway that opens
// its journal at start cannot be made to allocate, or die of), and no
// visit of each page: bbolt's own check, which reports each such page,
// went on for hours, and every change waited for it.
func TestASparseHugeFileIsDamageFoundAtItsOpen(t *testing.T) {
	path := sparseHuge(t, goodJournal(t))
	for _, o := range []struct {
		name string
		open func() (*Journal, error)
	}{
		{"OpenReadOnly", func() (*Journal, error) { return OpenReadOnly(path) }},
		{"Open", func() (*Journal, error) { return Open(path, "inst") }},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		j, err := o.open()
		runtime.ReadMemStats(&after)
		if err == nil {
			j.Close()
		}
		if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "neither in its page tree nor free") {
			t.Errorf("%s of a file whose meta pages name 1 TiB of pages outside its tree: %v, want damage", o.name, err)
		}
		// 256 MiB for each set of pages at a byte a page; a few KiB
		// where the memory follows the pages reached.
		if got := after.TotalAlloc - before.TotalAlloc; got > 4<<20 {
			t.Errorf("%s of a 1 TiB sparse file allocated %d MiB", o.name, got>>20)
		}
	}
}

// One page below the high water mark that is neither in the page tree
// nor free is damage, found by the walk of the tree before bbolt's check
// would find it.
func TestAPageNeitherInTheTreeNorFreeIsDamage(t *testing.T) {
	ps := os.Getpagesize()
	b := append(goodJournal(t), make([]byte, ps)...)
	for off := 0; off <= ps; off += ps {
		hwm := binary.LittleEndian.Uint64(b[off+16+40:])
		binary.LittleEndian.PutUint64(b[off+16+40:], hwm+1)
	}
	sealMeta(b, ps)
	path := filepath.Join(t.TempDir(), "journal.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := walkPages(path); err == nil || !strings.Contains(err.Error(), "1 of its") {
		t.Fatalf("a page past the tree and the freelist: %v, want damage", err)
	}
}

// A freelist that lists pages spread over a huge sparse file, one in
// each 65,536, costs the walk the memory of its list, not a set of the
// pages listed: such a set keeps 8 KiB for each 65,536 pages it holds
// one of, 32 MiB for 4,000 ids read from 32 KiB of the file.
func TestAFreelistSpreadOverAHugeFileCostsNoMemory(t *testing.T) {
	ps := os.Getpagesize()
	b := goodJournal(t)
	const ids = 4000
	fl, pages := len(b)/ps, (boltPageHeader+8+8*ids+ps-1)/ps // a freelist after the file's pages
	b = append(b, make([]byte, pages*ps)...)
	p := b[fl*ps:]
	binary.LittleEndian.PutUint16(p[8:], boltFreelist)
	binary.LittleEndian.PutUint16(p[10:], 0xffff) // the count is the first element
	binary.LittleEndian.PutUint32(p[12:], uint32(pages-1))
	binary.LittleEndian.PutUint64(p[boltPageHeader:], ids)
	for i := range ids {
		binary.LittleEndian.PutUint64(p[boltPageHeader+8+8*i:], uint64(i+1)*pageChunk)
	}
	for off := 0; off <= ps; off += ps {
		binary.LittleEndian.PutUint64(b[off+16+32:], uint64(fl))
	}
	path := sparseHuge(t, b)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := walkPages(path)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrDamaged) {
		t.Errorf("a file whose meta pages name 1 TiB of pages, %d of them free: %v, want damage", ids, err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 4<<20 {
		t.Errorf("checking a freelist of %d pages spread over 1 TiB allocated %d MiB", ids, got>>20)
	}
}
