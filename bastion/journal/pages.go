package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"runtime/debug"
	"slices"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// bbolt's file format, as far as checkPages needs it (go.etcd.io/bbolt,
// internal/common): page headers, meta pages, branch and leaf elements,
// bucket values.
const (
	boltMagic        = 0xED0CDAED
	boltVersion      = 2
	boltPageHeader   = 16 // id, flags, count, overflow
	boltElement      = 16 // a branch or leaf element
	boltBranch       = 0x01
	boltLeaf         = 0x02
	boltFreelist     = 0x10
	boltBucketLeaf   = 0x01 // a leaf element that is a bucket
	boltInBucketSize = 16   // a bucket value: root page, sequence
	maxTreeDepth     = 256  // far deeper than a real journal's trees
)

// checkPageGraph walks the page tree of the bbolt file f (the one bbolt
// opened at path: see openBolt), its nested buckets' trees included,
// reading only page headers, branch elements and bucket values, and
// refuses one bbolt would not survive reading: a page reached twice (a
// cycle, on which bbolt recurses until the process dies of a stack
// overflow), out of the file, deeper than maxTreeDepth, or of another
// type than a tree page. The caller holds bbolt's lock on the file, so
// no commit changes it meanwhile.
func checkPageGraph(f *os.File, path string) (err error) {
	pageGraphWalks.Add(1)
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("cannot check the command journal %s: %w", path, err)
	}
	if fi.Size() < boltPageHeader+64 || fi.Size() != int64(int(fi.Size())) {
		return damaged(path, fmt.Errorf("a file of %d bytes", fi.Size()))
	}
	// Mapped, as bbolt maps it, and read through windows of it (see
	// pageWindows): the walk reads a few bytes of each page.
	data, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("cannot check the command journal %s: %w", path, err)
	}
	defer unix.Munmap(data)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true)) // a file cut short meanwhile
	defer recoverDamage(path, &err)
	g := &pageGraph{pages: &pageWindows{f: f, data: data}}
	root, err := g.meta()
	if err == nil {
		err = g.tree(root, 0)
	}
	if err == nil {
		err = g.freeUnreached()
	}
	if err == nil {
		err = g.everyPageAccounted()
	}
	if err != nil {
		return damaged(path, err)
	}
	return nil
}

type pageGraph struct {
	pages *pageWindows // what the walk reads the pages through, the mapped file among them
	ps    uint64       // page size
	hwm   uint64       // pages below the high water mark
	seen  pageSet      // the pages reached
	free  []uint64     // the pages the freelist says are free
}

// meta reads the meta page bbolt would use, the valid one of the later
// transaction, and returns its root bucket's page.
func (g *pageGraph) meta() (root uint64, err error) {
	data := g.pages.data
	read := func(off uint64) []byte {
		if off+boltPageHeader+64 > uint64(len(data)) {
			return nil
		}
		m := data[off+boltPageHeader:][:64]
		h := fnv.New64a()
		h.Write(m[:56])
		if binary.LittleEndian.Uint32(m) != boltMagic || binary.LittleEndian.Uint32(m[4:]) != boltVersion || binary.LittleEndian.Uint64(m[56:]) != h.Sum64() {
			return nil
		}
		return m
	}
	best, next := read(0), uint64(os.Getpagesize())
	if best != nil {
		next = uint64(binary.LittleEndian.Uint32(best[8:]))
	}
	if m := read(next); m != nil && (best == nil || binary.LittleEndian.Uint64(m[48:]) > binary.LittleEndian.Uint64(best[48:])) {
		best = m
	}
	if best == nil {
		return 0, errors.New("no valid meta page")
	}
	g.ps, g.hwm = uint64(binary.LittleEndian.Uint32(best[8:])), binary.LittleEndian.Uint64(best[40:])
	if g.ps < 512 || g.ps > 1<<16 || g.hwm > uint64(len(data))/g.ps {
		return 0, fmt.Errorf("its meta page names %d pages of %d bytes, and the file holds %d bytes", g.hwm, g.ps, len(data))
	}
	g.seen = newPageSet(g.hwm)
	return binary.LittleEndian.Uint64(best[16:]), g.freelist(binary.LittleEndian.Uint64(best[32:]))
}

// freelist checks that the freelist page id holds the free page ids it
// counts: bbolt makes room for as many as it says, 2^64 of them if it
// says so, before it reads them. Each must be a page of the file other
// than the two meta pages, listed once: bbolt panics when it allocates a
// meta page ("invalid page allocation"), and would write two things on
// a page listed twice. The freelist's own pages are marked seen, so
// that a tree reaching them is refused.
func (g *pageGraph) freelist(id uint64) error {
	if id == 1<<64-1 { // none kept
		return nil
	}
	if id < 2 || id >= g.hwm {
		return fmt.Errorf("its freelist page %d is out of the file's %d pages", id, g.hwm)
	}
	head, win := g.pages.span(int64(id*g.ps), int64(g.ps))
	n, off, overflow := uint64(binary.LittleEndian.Uint16(head[10:])), uint64(boltPageHeader), uint64(binary.LittleEndian.Uint32(head[12:]))
	if n == 0xffff { // the count is the first element
		n, off = binary.LittleEndian.Uint64(head[boltPageHeader:]), boltPageHeader+8
	}
	flags := binary.LittleEndian.Uint16(head[8:])
	win.unpin()
	if flags != boltFreelist || id+overflow >= g.hwm || n > ((overflow+1)*g.ps-off)/8 {
		return fmt.Errorf("its freelist page %d is not one, or counts %d free pages in %d pages", id, n, overflow+1)
	}
	p, win := g.pages.span(int64(id*g.ps), int64((overflow+1)*g.ps))
	defer win.unpin()
	for i := id; i <= id+overflow; i++ {
		g.seen.add(i)
	}
	listsBad := func(id uint64) error {
		return fmt.Errorf("its freelist lists page %d, a meta page, one out of the file's %d pages, one listed twice or its own", id, g.hwm)
	}
	for i := range n {
		free := binary.LittleEndian.Uint64(p[off+8*i:])
		if free < 2 || free >= g.hwm || g.seen.has(free) {
			return listsBad(free)
		}
		g.free = append(g.free, free)
	}
	// A page listed twice is found in the list sorted, not in a set of
	// pages: the ids listed can be spread over every chunk of one, a
	// chunk's 8 KiB for each 8 bytes of the file.
	slices.Sort(g.free)
	for i := 1; i < len(g.free); i++ {
		if g.free[i] == g.free[i-1] {
			return listsBad(g.free[i])
		}
	}
	return nil
}

// freeUnreached checks, once the trees were walked, that no page the
// freelist says is free is one of theirs: bbolt would write over it.
func (g *pageGraph) freeUnreached() error {
	for _, id := range g.free {
		if g.seen.has(id) {
			return fmt.Errorf("page %d is in the page tree and in the freelist", id)
		}
	}
	return nil
}

// everyPageAccounted checks, once the trees and the freelist were read,
// that every page below the high water mark but the two meta pages is in
// a tree (the freelist's own pages with them) or listed free, as bbolt
// leaves its file: the pages reached and those listed are counted once
// each, and none is both. A page that is neither is one bbolt's own
// check reports ("unreachable unfreed") after visiting every page below
// the mark, one at a time: a file made sparse and huge, its meta pages
// naming every page of it, kept that check, and every change waiting
// for it, going for hours. A file that keeps no freelist has bbolt list
// every page outside the tree as free when it opens the file to write,
// in memory: it passes only when there is none.
func (g *pageGraph) everyPageAccounted() error {
	if n := g.hwm - 2 - g.seen.n - uint64(len(g.free)); n != 0 {
		return fmt.Errorf("%d of its %d pages are neither in its page tree nor free", n, g.hwm)
	}
	return nil
}

// tree walks the tree whose root is page id.
func (g *pageGraph) tree(id uint64, depth int) error {
	if depth > maxTreeDepth {
		return fmt.Errorf("its page tree is deeper than %d", maxTreeDepth)
	}
	if id < 2 || id >= g.hwm || g.seen.has(id) {
		return fmt.Errorf("page %d is reached twice, or is out of the tree (%d pages)", id, g.hwm)
	}
	head, win := g.pages.span(int64(id*g.ps), boltPageHeader)
	overflow := uint64(binary.LittleEndian.Uint32(head[12:]))
	win.unpin()
	if id+overflow >= g.hwm {
		return fmt.Errorf("page %d runs past the tree's end", id)
	}
	for i := id; i <= id+overflow; i++ {
		if g.seen.has(i) {
			return fmt.Errorf("page %d is reached twice", i)
		}
		g.seen.add(i)
	}
	p, win := g.pages.span(int64(id*g.ps), int64((overflow+1)*g.ps))
	defer win.unpin()
	return g.page(id, p, depth)
}

// page walks the elements of page p (a page of the file, or a bucket's
// inline page, numbered id as its parent's), each key and value within
// the page.
func (g *pageGraph) page(id uint64, p []byte, depth int) error {
	if len(p) < boltPageHeader {
		return fmt.Errorf("page %d is cut short", id)
	}
	flags, count := binary.LittleEndian.Uint16(p[8:]), int(binary.LittleEndian.Uint16(p[10:]))
	switch {
	case flags != boltBranch && flags != boltLeaf:
		return fmt.Errorf("page %d in the tree is of type %#x", id, flags)
	case flags == boltBranch && count == 0:
		return fmt.Errorf("page %d is an empty branch", id)
	case boltPageHeader+count*boltElement > len(p):
		return fmt.Errorf("page %d holds more elements than its size", id)
	}
	for i := range count {
		off := boltPageHeader + i*boltElement
		e := p[off:]
		pos, ksize := int(binary.LittleEndian.Uint32(e[4:])), int(binary.LittleEndian.Uint32(e[8:]))
		if flags == boltBranch {
			pos, ksize = int(binary.LittleEndian.Uint32(e)), int(binary.LittleEndian.Uint32(e[4:]))
		}
		vsize := 0
		if flags == boltLeaf {
			vsize = int(binary.LittleEndian.Uint32(e[12:]))
		}
		start := off + pos + ksize // the value's
		if start > len(p) || start+vsize > len(p) {
			return fmt.Errorf("page %d: element %d lies outside its page", id, i)
		}
		var err error
		switch {
		case flags == boltBranch:
			err = g.tree(binary.LittleEndian.Uint64(e[8:]), depth+1)
		case binary.LittleEndian.Uint32(e)&boltBucketLeaf == 0:
		case vsize < boltInBucketSize:
			err = fmt.Errorf("page %d: a bucket of %d bytes", id, vsize)
		case binary.LittleEndian.Uint64(p[start:]) != 0:
			err = g.tree(binary.LittleEndian.Uint64(p[start:]), depth+1)
		default:
			err = g.inline(id, p[start+boltInBucketSize:start+vsize], depth+1)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// inline walks a bucket's inline page, which must be a leaf.
func (g *pageGraph) inline(id uint64, p []byte, depth int) error {
	if depth > maxTreeDepth {
		return fmt.Errorf("its buckets are nested deeper than %d", maxTreeDepth)
	}
	if len(p) >= boltPageHeader && binary.LittleEndian.Uint16(p[8:]) != boltLeaf {
		return fmt.Errorf("page %d: an inline bucket that is not a leaf", id)
	}
	return g.page(id, p, depth)
}

// pageGraphWalks counts the walks checkPageGraph made, for the tests.
var pageGraphWalks atomic.Int64

// fileStamp tells a file from the one it was: its device and inode, its
// size, and its times of modification and of change (which no program
// of the user can set back).
type fileStamp struct {
	dev, ino, size   uint64
	mtimeNs, ctimeNs int64
}

func stampOf(f *os.File) (fileStamp, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return fileStamp{}, err
	}
	return fileStamp{dev: uint64(st.Dev), ino: st.Ino, size: uint64(st.Size), mtimeNs: st.Mtim.Nano(), ctimeNs: st.Ctim.Nano()}, nil
}
