package journal

import "os"

// pageWindows serves the page tree's walk the bytes of the pages it
// reads. Mapping a page costs its first touch a fault and a page table
// entry, about 2.4 µs a page on a VM, where copying it with the pages
// around it in one read costs a fifth of that; and the pages of a tree
// bbolt has appended to lie mostly in the order of the file. So the
// walk reads the file in windows of windowSize bytes and keeps the last
// few. Where the windows read hold too few of the pages the walk asks
// for (a tree scattered over the file, by use or on purpose), no more
// are read while they have read more than twice the bytes they served:
// the mapping serves what the windows held do not, as it did before.
type pageWindows struct {
	f    *os.File
	data []byte // the file, mapped
	wins []*window
	// read is the bytes read into windows, used those of the pages
	// served from them.
	read, used int64
	tick       uint64
}

// A window is a copy of the file from off.
type window struct {
	off  int64
	b    []byte
	pins int    // pages of it the walk still reads
	last uint64 // when it last served a page
}

const (
	windowSize = 128 << 10
	// keptWindows is the windows kept once read, pinned ones aside: a
	// page's window is pinned while the walk reads its elements and the
	// trees under them.
	keptWindows = 4
	// maxWindows bounds the windows held, pinned ones included (a
	// tree as deep as maxTreeDepth, each level in a window of its own):
	// past it, the mapping serves.
	maxWindows = 16
)

// span returns the n bytes of the file from off, which the caller has
// found within the file, and the window that holds them (nil when the
// mapping serves them), to unpin once it has read them.
func (w *pageWindows) span(off, n int64) ([]byte, *window) {
	if win := w.window(off, n); win != nil {
		win.pins++
		w.tick++
		win.last = w.tick
		w.used += n
		return win.b[off-win.off:][:n], win
	}
	return w.data[off:][:n], nil
}

// window returns a window that holds the n bytes from off, reading one
// when none does and reading still pays; nil when none does.
func (w *pageWindows) window(off, n int64) *window {
	for _, win := range w.wins {
		if off >= win.off && off+n <= win.off+int64(len(win.b)) {
			return win
		}
	}
	start := off - off%windowSize
	if off+n > start+windowSize || w.read > 2*w.used+keptWindows*windowSize {
		// A span across windows is served by the mapping; so is every
		// span outside the windows held while the bytes read are more
		// than twice those used.
		return nil
	}
	win := w.reuse()
	if win == nil {
		return nil
	}
	size := min(windowSize, int64(len(w.data))-start)
	if cap(win.b) < int(size) {
		win.b = make([]byte, size)
	}
	win.off, win.b = start, win.b[:size]
	got, _ := w.f.ReadAt(win.b, start)
	w.read += int64(got)
	if got < len(win.b) {
		// Cut short, or failed: the file changed under the walk (the
		// caller holds bbolt's lock, which a program of the user's may
		// ignore). The mapping serves, and faults where the file ends.
		win.off, win.b = -1, win.b[:0]
		return nil
	}
	return win
}

// reuse returns the unpinned window that served a page the longest ago,
// or a new one while fewer than keptWindows are unpinned and fewer than
// maxWindows are held; nil when none may be had.
func (w *pageWindows) reuse() *window {
	var oldest *window
	free := 0
	for _, win := range w.wins {
		if win.pins == 0 {
			free++
			if oldest == nil || win.last < oldest.last {
				oldest = win
			}
		}
	}
	if oldest != nil && (free >= keptWindows || len(w.wins) >= maxWindows) {
		return oldest
	}
	if len(w.wins) >= maxWindows {
		return nil
	}
	win := &window{off: -1}
	w.wins = append(w.wins, win)
	return win
}

// unpin ends a page's read of its window.
func (win *window) unpin() {
	if win != nil {
		win.pins--
	}
}
