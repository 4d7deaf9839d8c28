package journal

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"sync"
	"time"
)

// An ID is 26 characters of Crockford base32 (digits and upper-case letters
// without I, L, O and U) encoding 128 bits: a 48-bit Unix time in
// milliseconds followed by 80 random bits, the layout of a ULID. IDs sort
// as strings in the order they were made; within one process they are
// strictly increasing even when the clock stands still or steps back.
const idLen = 26

const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

var crockfordValue = func() (t [256]int8) {
	for i := range t {
		t[i] = -1
	}
	for i := 0; i < len(crockford); i++ {
		t[crockford[i]] = int8(i)
	}
	return t
}()

// idGenerator makes IDs that never go backwards.
type idGenerator struct {
	mu     sync.Mutex
	ms     uint64
	hi, lo uint64 // the 80 random bits of the last ID: hi holds the top 16
}

var ids idGenerator

// NewID returns a new time-sortable ID, a good choice for bastion
// instance ids. A journal makes its entries' ids itself (Start): after
// every id it holds, whatever the clock says.
func NewID() string {
	return ids.next(time.Now())
}

func (g *idGenerator) next(t time.Time) string {
	ms := uint64(t.UnixMilli()) & (1<<48 - 1)

	g.mu.Lock()
	defer g.mu.Unlock()
	if ms > g.ms {
		var b [10]byte
		if _, err := rand.Read(b[:]); err != nil {
			panic("journal: no randomness for an id: " + err.Error())
		}
		g.ms = ms
		g.hi = uint64(binary.BigEndian.Uint16(b[:2]))
		g.lo = binary.BigEndian.Uint64(b[2:])
	} else {
		// Same millisecond (or the clock went back): keep the last time and
		// count up, so IDs made here never go backwards.
		g.lo++
		if g.lo == 0 {
			g.hi++
			if g.hi == 1<<16 {
				g.hi = 0
				g.ms++
			}
		}
	}
	return encodeID(g.ms, g.hi, g.lo)
}

// after makes the ids g makes from now on sort after id (a valid id),
// whatever the clock says: a journal's new entries sort after those it
// holds, some of which may have been made while the clock was ahead.
func (g *idGenerator) after(id string) {
	ms, hi, lo := decodeID(id)
	g.mu.Lock()
	defer g.mu.Unlock()
	if ms > g.ms || ms == g.ms && (hi > g.hi || hi == g.hi && lo > g.lo) {
		g.ms, g.hi, g.lo = ms, hi, lo
	}
}

// decodeID reads back what encodeID wrote, from a valid id.
func decodeID(id string) (ms, hi, lo uint64) {
	var a, b uint64 // the top 64 bits and the low 64 bits
	for i := 0; i < idLen; i++ {
		a = a<<5 | b>>59
		b = b<<5 | uint64(crockfordValue[id[i]])
	}
	return a >> 16, a & (1<<16 - 1), b
}

// encodeID writes the 130-bit big-endian number 0‖ms[48]‖hi[16]‖lo[64]
// as 26 base32 digits.
func encodeID(ms, hi, lo uint64) string {
	// a holds the top 64 bits (ms and hi), b the low 64 bits.
	a := ms<<16 | hi
	b := lo
	var out [idLen]byte
	for i := idLen - 1; i >= 0; i-- {
		out[i] = crockford[b&31]
		b = b>>5 | a<<59
		a >>= 5
	}
	return string(out[:])
}

// ValidID reports whether id has the form NewID makes.
func ValidID(id string) bool {
	if len(id) != idLen || id[0] > '7' {
		return false
	}
	for i := 0; i < len(id); i++ {
		if crockfordValue[id[i]] < 0 {
			return false
		}
	}
	return true
}

// IDTime returns the time encoded in an ID, to the millisecond.
func IDTime(id string) (time.Time, error) {
	if !ValidID(id) {
		return time.Time{}, fmt.Errorf("%q is not a journal id (26 characters, 0-9 and A-Z without I, L, O, U)", id)
	}
	var ms uint64
	// The first 10 digits hold 50 bits: 2 zero bits and the 48-bit time.
	for i := 0; i < 10; i++ {
		ms = ms<<5 | uint64(crockfordValue[id[i]])
	}
	return time.UnixMilli(int64(ms)), nil
}
