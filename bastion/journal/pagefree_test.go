package journal

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A freelist that lists a page bbolt must not write over (a meta page,
// a page of the tree, the freelist's own, or one page twice, which
// bbolt would hand out twice) is damage: bbolt would write the next
// commit over records or over the file's meta, and lose them.
func TestFreelistListingAPageInUseIsDamage(t *testing.T) {
	ps := os.Getpagesize()
	good := goodJournal(t)
	for _, c := range []struct {
		name string
		free func(freelist, root uint64) []uint64
		want string
	}{
		{"a meta page", func(_, _ uint64) []uint64 { return []uint64{1} }, "a meta page"},
		{"the tree's root", func(_, root uint64) []uint64 { return []uint64{root} }, "in the page tree and in the freelist"},
		{"its own page", func(fl, _ uint64) []uint64 { return []uint64{fl} }, "or its own"},
		{"a page twice", func(_, _ uint64) []uint64 {
			hwm := binary.LittleEndian.Uint64(good[ps+16+40:])
			return []uint64{hwm - 1, hwm - 1}
		}, "listed twice"},
	} {
		b := append([]byte(nil), good...)
		for m := 0; m < 2; m++ { // the freelist of each meta page
			fl := binary.LittleEndian.Uint64(b[m*ps+16+32:])
			p := b[int(fl)*ps:]
			free := c.free(fl, binary.LittleEndian.Uint64(b[m*ps+16+16:]))
			binary.LittleEndian.PutUint16(p[10:], uint16(len(free)))
			for i, id := range free {
				binary.LittleEndian.PutUint64(p[16+8*i:], id)
			}
		}
		path := filepath.Join(t.TempDir(), "journal.db")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := walkPages(path); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("a freelist listing %s: %v, want damage (%q)", c.name, err, c.want)
		}
	}
}
