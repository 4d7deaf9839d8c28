package journal

// pageSet is a set of the page ids below a bound, kept in chunks of
// pageChunk pages each made when a page of it is first added: its memory
// follows the pages added, not the bound. The bound is the high water
// mark a meta page names, which a file made sparse puts at billions of
// pages without taking any disk.
type pageSet struct {
	chunks []*[pageChunk / 64]uint64
	n      uint64 // the pages in the set
}

// pageChunk is the pages of one chunk: 8 KiB of bits.
const pageChunk = 1 << 16

// newPageSet returns an empty set of the pages below n: a pointer for
// each chunk, 8 bytes for every 65,536 pages.
func newPageSet(n uint64) pageSet {
	return pageSet{chunks: make([]*[pageChunk / 64]uint64, (n+pageChunk-1)/pageChunk)}
}

func (s pageSet) has(id uint64) bool {
	c := s.chunks[id/pageChunk]
	return c != nil && c[id%pageChunk/64]&(1<<(id%64)) != 0
}

func (s *pageSet) add(id uint64) {
	c := s.chunks[id/pageChunk]
	if c == nil {
		c = new([pageChunk / 64]uint64)
		s.chunks[id/pageChunk] = c
	}
	if c[id%pageChunk/64]&(1<<(id%64)) == 0 {
		c[id%pageChunk/64] |= 1 << (id % 64)
		s.n++
	}
}
