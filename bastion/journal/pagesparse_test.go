package journal

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// A journal file made sparse and huge, its meta pages naming every page
// of it (a program of the user's can make one in a moment, with no disk
// to spare), costs the check of its page tree memory for the pages the
// tree reaches, not for the pages the file claims: one byte for each
// of a 16 TiB file's pages would be 4 GiB, which a gateway that opens its
// journal at start cannot be made to allocate, or die of.
func TestASparseHugeFileCostsTheCheckNoMemory(t *testing.T) {
	ps := os.Getpagesize()
	b := goodJournal(t)
	const size = 1 << 40 // 1 TiB, a sparse file on any file system of the tests
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
	for _, o := range []struct {
		name string
		open func() (*Journal, error)
	}{
		{"OpenReadOnly", func() (*Journal, error) { return OpenReadOnly(path) }},
		{"Open", func() (*Journal, error) { return Open(path, "inst") }},
	} {
		walks := pageGraphWalks.Load()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		j, err := o.open()
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatalf("%s of a sound file made sparse: %v", o.name, err)
		}
		j.Close()
		if pageGraphWalks.Load() == walks {
			t.Fatalf("%s did not check the page tree", o.name)
		}
		// 256 MiB for each set of pages at a byte a page; a few KiB
		// where the memory follows the pages reached.
		if got := after.TotalAlloc - before.TotalAlloc; got > 4<<20 {
			t.Errorf("%s of a 1 TiB sparse file allocated %d MiB", o.name, got>>20)
		}
	}
}
