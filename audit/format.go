package audit

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"time"
)

// Record types (the first byte of a record body).
const (
	recHeader     byte = 1
	recEntry      byte = 2
	recCheckpoint byte = 3
)

// Framing sizes.
const (
	frameHeaderSize = 8           // u32be length ‖ u32be complement of the length
	linkSize        = sha256.Size // trailing chain link
	bodyFixedSize   = 1 + 8 + 32  // type ‖ seq ‖ prev
	// maxBody is the hard cap on a record body. A length field above it is
	// never written, so a reader never allocates more than this for a record.
	maxBody = 64 << 10
	// maxFrame is the largest frame on disk.
	maxFrame = frameHeaderSize + maxBody + linkSize
	// tornAlign is the granularity at which a file system may leave zero
	// bytes where written data was lost in a power failure.
	tornAlign = 512
	// minZeroFill is the shortest run of trailing zero bytes taken as crash
	// filler wherever it starts.
	minZeroFill = 32
	// maxWrite is the most bytes the writer puts in one write: a crash can
	// leave a partial write of at most this many bytes after the last
	// record.
	maxWrite = batchLimit + maxFrame
)

// Format versions, the byte after the header magic. Version 1 is one file,
// appended to. Version 2 is a series of pre-allocated segments (see
// segment.go) with entries sealed by key chains (chain.go) and checkpoints
// that carry a sealed summary (summary.go). A version 1 log is continued in
// version 2 segments: its first file keeps its version 1 records.
const (
	version1       byte = 1
	version2       byte = 2
	currentVersion      = version2
)

// Domain separation strings.
const (
	linkDomain         = "postern-audit/v1/link\x00"
	checkpointDomain   = "postern-audit/v1/checkpoint\x00"
	checkpointDomainV2 = "postern-audit/v2/checkpoint\x00"
	headerMagic        = "POSTERN-AUDIT\x01" // 13 bytes of name, 1 byte of version
)

// Header payload: magic ‖ log id ‖ created ‖ pk0 ‖ recipient.
const headerPayloadSize = len(headerMagic) + 16 + 8 + ed25519.PublicKeySize + 32

// header is the decoded payload of the first record.
type header struct {
	version   byte
	logID     [16]byte
	created   int64 // unix nanoseconds
	pk0       [32]byte
	recipient [32]byte
}

func (h *header) marshal() []byte {
	b := make([]byte, 0, headerPayloadSize)
	b = append(b, headerMagic[:len(headerMagic)-1]...)
	b = append(b, h.version)
	b = append(b, h.logID[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(h.created))
	b = append(b, h.pk0[:]...)
	b = append(b, h.recipient[:]...)
	return b
}

func parseHeader(p []byte) (header, error) {
	var h header
	if len(p) < len(headerMagic) || string(p[:len(headerMagic)-1]) != headerMagic[:len(headerMagic)-1] {
		return h, errors.New("header magic is not POSTERN-AUDIT: this is not a postern audit log")
	}
	// The version before the size: a later version may have another.
	h.version = p[len(headerMagic)-1]
	switch {
	case h.version > currentVersion:
		return h, fmt.Errorf("%w: format version %d, and this build reads versions %d and %d: upgrade postern to read it", ErrNewerFormat, h.version, version1, version2)
	case h.version != version1 && h.version != version2:
		return h, fmt.Errorf("header has format version %d, which no postern wrote", h.version)
	case len(p) != headerPayloadSize:
		return h, fmt.Errorf("header payload is %d bytes, want %d", len(p), headerPayloadSize)
	}
	p = p[len(headerMagic):]
	copy(h.logID[:], p[:16])
	h.created = int64(binary.BigEndian.Uint64(p[16:24]))
	copy(h.pk0[:], p[24:56])
	copy(h.recipient[:], p[56:88])
	return h, nil
}

// linker computes chain links; it reuses one hash state.
type linker struct{ h hash.Hash }

func newLinker() *linker { return &linker{h: sha256.New()} }

func (l *linker) link(body []byte) (out [32]byte) {
	l.h.Reset()
	l.h.Write([]byte(linkDomain))
	l.h.Write(body)
	l.h.Sum(out[:0])
	return out
}

// appendFrame appends one complete frame to dst and returns it with the
// frame's link.
func (l *linker) appendFrame(dst []byte, typ byte, seq uint64, prev [32]byte, payload []byte) ([]byte, [32]byte) {
	n := bodyFixedSize + len(payload)
	dst = binary.BigEndian.AppendUint32(dst, uint32(n))
	dst = binary.BigEndian.AppendUint32(dst, ^uint32(n))
	start := len(dst)
	dst = append(dst, typ)
	dst = binary.BigEndian.AppendUint64(dst, seq)
	dst = append(dst, prev[:]...)
	dst = append(dst, payload...)
	link := l.link(dst[start:])
	return append(dst, link[:]...), link
}

// lengthOK reports whether a frame length header is intact and within the cap.
func lengthOK(hdr []byte) (n int, ok bool) {
	v := binary.BigEndian.Uint32(hdr[0:4])
	c := binary.BigEndian.Uint32(hdr[4:8])
	if c != ^v || v < bodyFixedSize || v > maxBody {
		return int(v), false
	}
	return int(v), true
}

// entryCiphertextOK reports whether an entry payload has a size the writer
// of that record version produces: a sealed box (48 bytes of overhead,
// version 1) or a chain-sealed entry (52 bytes, version 2) over a padded
// plaintext.
func entryCiphertextOK(version byte, n int) bool {
	over := entryV2Overhead
	if version == version1 {
		over = sealOverheadV1
	}
	return n >= over+padBucket && (n-over)%padBucket == 0
}

func unixNano(t int64) time.Time { return time.Unix(0, t).UTC() }
