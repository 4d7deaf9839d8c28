package connlimit

import "sync/atomic"

// Bytes bounds the bytes a socket's connections hold together in the
// requests they are receiving: a connection is cheap, and each may hold
// a request as large as the socket takes for as long as the socket
// waits for it, so the connection bound alone bounds them only by their
// count times the largest request. A request takes its bytes as its
// buffer grows, and gives them back once it is answered.
type Bytes struct{ n atomic.Int64 }

// Take takes k bytes, unless that would hold more than max together.
func (b *Bytes) Take(k int, max int64) bool {
	if b.n.Add(int64(k)) > max {
		b.n.Add(-int64(k))
		return false
	}
	return true
}

// Give gives back k bytes taken.
func (b *Bytes) Give(k int) {
	if k > 0 {
		b.n.Add(-int64(k))
	}
}
