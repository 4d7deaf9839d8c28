package journal

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// windowedFile returns pageWindows over a file of n windows of random
// bytes, mapped as checkPageGraph maps it.
func windowedFile(t *testing.T, n int) (*pageWindows, string) {
	t.Helper()
	b := make([]byte, n*windowSize)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	path := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	data, err := unix.Mmap(int(f.Fd()), 0, len(b), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(data) })
	return &pageWindows{f: f, data: data}, path
}

// spanIs fails unless b is the file's n bytes from off.
func spanIs(t *testing.T, w *pageWindows, b []byte, off, n int64) {
	t.Helper()
	if !bytes.Equal(b, w.data[off:off+n]) {
		t.Fatalf("the %d bytes at %d are not the file's", n, off)
	}
}

// A walk in the order of the file is served by the windows, each byte
// read once, and gets the file's bytes.
func TestPageWindowsServeAWalkInFileOrder(t *testing.T) {
	w, _ := windowedFile(t, 20)
	const ps = 4096
	for off := int64(0); off < int64(len(w.data)); off += ps {
		b, win := w.span(off, ps)
		if win == nil {
			t.Fatalf("page at %d: served by the mapping", off)
		}
		spanIs(t, w, b, off, ps)
		win.unpin()
	}
	if w.read != int64(len(w.data)) || w.used != int64(len(w.data)) {
		t.Fatalf("read %d bytes for %d used of a %d-byte file", w.read, w.used, len(w.data))
	}
}

// A window a page of which the walk still reads (its elements, while the
// trees under them are walked) is not read over by the windows the walk
// reads meanwhile; past maxWindows held, the mapping serves.
func TestPageWindowsKeepThePinnedOnes(t *testing.T) {
	w, _ := windowedFile(t, 2*maxWindows)
	type held struct {
		b   []byte
		win *window
		off int64
	}
	var pinned []held
	for i := range maxWindows + 4 {
		off := int64(i)*windowSize + 100
		b, win := w.span(off, windowSize/2)
		if (win == nil) != (i >= maxWindows) {
			t.Fatalf("window %d of %d pinned at once: served by a window: %v", i, maxWindows, win != nil)
		}
		spanIs(t, w, b, off, windowSize/2)
		pinned = append(pinned, held{b, win, off})
	}
	for _, p := range pinned {
		spanIs(t, w, p.b, p.off, windowSize/2)
		p.win.unpin()
	}
	// Unpinned, they are read over again, the one that served last the
	// longest ago first.
	for off := int64(0); off < int64(len(w.data)); off += 4096 {
		b, win := w.span(off, 4096)
		spanIs(t, w, b, off, 4096)
		win.unpin()
	}
	if len(w.wins) > maxWindows {
		t.Fatalf("%d windows held, at most %d", len(w.wins), maxWindows)
	}
}

// A walk that jumps about the file (a tree scattered by use, or by a
// program that wrote the file) makes the windows read far more than the
// walk uses: once they have read twice what it used, the mapping serves
// what the windows held do not, most of the walk, and every span is the
// file's.
func TestPageWindowsGiveWayToTheMappingForAScatteredWalk(t *testing.T) {
	w, _ := windowedFile(t, 64)
	const ps = 4096
	pages := len(w.data) / ps
	r := rand.New(rand.NewPCG(3, 4))
	mapped := 0
	for i, p := range r.Perm(pages) {
		off := int64(p) * ps
		b, win := w.span(off, ps)
		spanIs(t, w, b, off, ps)
		win.unpin()
		if win == nil {
			if i < 4 {
				t.Fatalf("the mapping served page %d of the walk", i)
			}
			mapped++
		}
	}
	if mapped < pages/2 {
		t.Fatalf("the mapping served %d pages of a walk of %d in random order: %d bytes read for %d used", mapped, pages, w.read, w.used)
	}
	if limit := 2*w.used + (keptWindows+1)*windowSize; w.read > limit {
		t.Fatalf("read %d bytes for %d used, more than %d", w.read, w.used, limit)
	}
}

// A span across two windows, and one in a file cut short after it was
// mapped, are the mapping's: a window holds whole spans of the file as
// it is.
func TestPageWindowsServeNoPartOfASpan(t *testing.T) {
	w, path := windowedFile(t, 4)
	b, win := w.span(windowSize-100, 200)
	if win != nil {
		t.Fatal("a span across two windows was served by one")
	}
	spanIs(t, w, b, windowSize-100, 200)
	if err := os.Truncate(path, windowSize+windowSize/2); err != nil {
		t.Fatal(err)
	}
	if _, win := w.span(windowSize+windowSize/4, 100); win != nil {
		t.Fatal("a span of a window cut short was served by the window")
	}
}
