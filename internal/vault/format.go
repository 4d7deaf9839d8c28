package vault

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"unicode/utf8"

	"golang.org/x/crypto/chacha20poly1305"
	"golang.org/x/crypto/cryptobyte"
)

// File layout (all integers big-endian):
//
//	"POSTERN-VAULT"  13 bytes magic
//	version          1 byte, 1
//	u32 H            header length, 1..65536
//	header           H bytes (below)
//	u32 W            wrapped-key length, exactly 104
//	check            32 bytes HMAC-SHA256(KEK, "postern vault key check v1")
//	nonce            24 bytes
//	sealed DEK       48 bytes XChaCha20-Poly1305(KEK, DEK, aad)
//	u32 B            body length, 40..16 MiB+40
//	nonce            24 bytes
//	sealed body      XChaCha20-Poly1305(DEK, body plaintext, aad||W||wrap)
//
// aad is every byte from the magic to the end of the header; the body's
// associated data extends it through the wrapped key, so that a vault
// opened with its data key alone (OpenWithKey) still detects an edit of
// any byte before the body length. The header:
//
//	u8  kdf          1 = argon2id
//	u32 time, u32 memory (KiB), u8 threads
//	16  salt
//	16  vault id
//	u16 n            public metadata entries, keys strictly increasing
//	n × (u16 len, key, u16 len, value)    UTF-8, key non-empty
//
// Nothing may follow the body. The encoding is canonical: parsing then
// re-encoding any accepted file gives back the same bytes.
const (
	fileMagic     = "POSTERN-VAULT"
	formatVersion = 1
	prefixSize    = len(fileMagic) + 1 + 4

	kdfArgon2id = 1

	saltSize  = 16
	idSize    = 16
	keySize   = 32
	checkSize = 32
	nonceSize = chacha20poly1305.NonceSizeX
	tagSize   = chacha20poly1305.Overhead
	wrapSize  = checkSize + nonceSize + keySize + tagSize

	maxHeaderSize = 64 << 10
	maxBodyPlain  = 16 << 20
	minBodySize   = nonceSize + tagSize
	maxBodySize   = nonceSize + maxBodyPlain + tagSize
	maxFileSize   = prefixSize + maxHeaderSize + 4 + wrapSize + 4 + maxBodySize

	maxMetaKey = 255
)

// header is the cleartext part of the file that is readable without the
// passphrase.
type header struct {
	params Params
	salt   [saltSize]byte
	id     [idSize]byte
	meta   map[string]string
}

// fileParts is a file split into its sections, before any cryptography.
type fileParts struct {
	hdr     header
	aad     []byte // magic through end of header
	wrap    []byte // wrapSize bytes
	bodyAAD []byte // magic through end of wrap
	body    []byte // nonce || sealed body
}

// validateMeta checks the public metadata against the format's limits.
func validateMeta(meta map[string]string) error {
	for k, v := range meta {
		if k == "" || len(k) > maxMetaKey {
			return fmt.Errorf("metadata key %q must be 1 to %d bytes", k, maxMetaKey)
		}
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return fmt.Errorf("metadata entry %q is not valid UTF-8", k)
		}
		if len(v) > 0xffff {
			return fmt.Errorf("metadata value for %q is longer than 65535 bytes", k)
		}
	}
	return nil
}

// marshal encodes magic, version and header: the AAD of both seals.
func (h *header) marshal() ([]byte, error) {
	if err := h.params.Validate(); err != nil {
		return nil, err
	}
	if err := validateMeta(h.meta); err != nil {
		return nil, err
	}
	size := 1 + 4 + 4 + 1 + saltSize + idSize + 2
	for k, v := range h.meta {
		size += 2 + len(k) + 2 + len(v)
	}
	if size > maxHeaderSize {
		return nil, fmt.Errorf("public metadata is too large (header would be %d bytes, limit %d)", size, maxHeaderSize)
	}
	b := cryptobyte.NewFixedBuilder(make([]byte, 0, prefixSize+size))
	b.AddBytes([]byte(fileMagic))
	b.AddUint8(formatVersion)
	b.AddUint32LengthPrefixed(func(b *cryptobyte.Builder) {
		b.AddUint8(kdfArgon2id)
		b.AddUint32(h.params.Time)
		b.AddUint32(h.params.Memory)
		b.AddUint8(h.params.Threads)
		b.AddBytes(h.salt[:])
		b.AddBytes(h.id[:])
		b.AddUint16(uint16(len(h.meta)))
		for _, k := range slices.Sorted(maps.Keys(h.meta)) {
			addUint16String(b, k)
			addUint16String(b, h.meta[k])
		}
	})
	return b.Bytes()
}

func addUint16String(b *cryptobyte.Builder, s string) {
	b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes([]byte(s)) })
}

// parsePrefix parses magic, version and header from the start of b and
// returns the header and its encoded length (the AAD length). Errors are
// corruptErrors.
func parsePrefix(b []byte) (header, int, error) {
	var h header
	if len(b) < len(fileMagic) || !bytes.Equal(b[:len(fileMagic)], []byte(fileMagic)) {
		if len(b) < len(fileMagic) && bytes.HasPrefix([]byte(fileMagic), b) {
			return h, 0, corrupt("file is truncated (%d bytes)", len(b))
		}
		return h, 0, corrupt("not a postern vault (bad magic)")
	}
	s := cryptobyte.String(b[len(fileMagic):])
	var (
		version uint8
		size    uint32
	)
	if !s.ReadUint8(&version) || !s.ReadUint32(&size) {
		return h, 0, corrupt("file is truncated inside the header")
	}
	switch {
	case version > formatVersion:
		return h, 0, newerFormat("format", version, formatVersion)
	case version != formatVersion:
		return h, 0, corrupt("format version %d is none postern ever wrote", version)
	}
	if size == 0 || size > maxHeaderSize {
		return h, 0, corrupt("header length %d is outside 1..%d", size, maxHeaderSize)
	}
	var hdr []byte
	if !s.ReadBytes(&hdr, int(size)) {
		return h, 0, corrupt("file is truncated inside the header")
	}
	raw := cryptobyte.String(hdr)
	var (
		kdf uint8
		n   uint16
	)
	if !raw.ReadUint8(&kdf) ||
		!raw.ReadUint32(&h.params.Time) ||
		!raw.ReadUint32(&h.params.Memory) ||
		!raw.ReadUint8(&h.params.Threads) ||
		!raw.CopyBytes(h.salt[:]) ||
		!raw.CopyBytes(h.id[:]) ||
		!raw.ReadUint16(&n) {
		return h, 0, corrupt("header is too short")
	}
	if kdf != kdfArgon2id {
		return h, 0, corrupt("unknown key derivation function %d", kdf)
	}
	if err := h.params.Validate(); err != nil {
		return h, 0, corrupt("%v (the file was downgraded or damaged)", err)
	}
	h.meta = make(map[string]string, min(n, 64))
	prev := ""
	for i := range int(n) {
		var k, v cryptobyte.String
		if !raw.ReadUint16LengthPrefixed(&k) || !raw.ReadUint16LengthPrefixed(&v) {
			return h, 0, corrupt("header metadata entry %d is truncated", i)
		}
		key := string(k)
		if i > 0 && key <= prev {
			return h, 0, corrupt("header metadata keys are not in strictly increasing order")
		}
		prev = key
		h.meta[key] = string(v)
	}
	if !raw.Empty() {
		return h, 0, corrupt("%d unexpected bytes at the end of the header", len(raw))
	}
	if err := validateMeta(h.meta); err != nil {
		return h, 0, corrupt("%v", err)
	}
	return h, prefixSize + int(size), nil
}

// parseFile splits a whole file into its sections and checks every
// length and every header field. It does no cryptography.
func parseFile(b []byte) (*fileParts, error) {
	if len(b) > maxFileSize {
		return nil, corrupt("file is %d bytes, more than any vault can be (%d)", len(b), maxFileSize)
	}
	h, n, err := parsePrefix(b)
	if err != nil {
		return nil, err
	}
	s := cryptobyte.String(b[n:])
	var w, bl uint32
	var wrap, body []byte
	if !s.ReadUint32(&w) {
		return nil, corrupt("file is truncated after the header")
	}
	if w != wrapSize {
		return nil, corrupt("wrapped key length %d, expected %d", w, wrapSize)
	}
	if !s.ReadBytes(&wrap, wrapSize) {
		return nil, corrupt("file is truncated inside the wrapped key")
	}
	if !s.ReadUint32(&bl) {
		return nil, corrupt("file is truncated after the wrapped key")
	}
	if bl < minBodySize || bl > maxBodySize {
		return nil, corrupt("body length %d is outside %d..%d", bl, minBodySize, maxBodySize)
	}
	if !s.ReadBytes(&body, int(bl)) {
		return nil, corrupt("file is truncated inside the body (%d of %d bytes)", len(s), bl)
	}
	if !s.Empty() {
		return nil, corrupt("%d unexpected bytes after the body", len(s))
	}
	end := n + 4 + wrapSize
	return &fileParts{hdr: h, aad: b[:n:n], wrap: wrap, bodyAAD: b[:end:end], body: body}, nil
}

// bodyAAD returns the associated data of the body: aad, the wrap length
// and the wrap, as they appear in the file.
func bodyAAD(aad, wrap []byte) []byte {
	b := cryptobyte.NewFixedBuilder(make([]byte, 0, len(aad)+4+len(wrap)))
	b.AddBytes(aad)
	addUint32Bytes(b, wrap)
	return b.BytesOrPanic() // exactly sized, and wrap is far below 4 GiB
}

// assemble is the inverse of parseFile: prefix is bodyAAD(aad, wrap).
func assemble(prefix, body []byte) []byte {
	b := cryptobyte.NewFixedBuilder(make([]byte, 0, len(prefix)+4+len(body)))
	b.AddBytes(prefix)
	addUint32Bytes(b, body)
	return b.BytesOrPanic() // exactly sized, and body is at most maxBodySize
}

// addUint32Bytes adds v with a big-endian u32 length prefix.
func addUint32Bytes(b *cryptobyte.Builder, v []byte) {
	b.AddUint32LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes(v) })
}

// readUint32Bytes reads a field with a big-endian u32 length prefix
// (cryptobyte's own length-prefixed reads stop at 24 bits). The result
// aliases s.
func readUint32Bytes(s *cryptobyte.String, out *[]byte) bool {
	var n uint32
	return s.ReadUint32(&n) && s.ReadBytes(out, int(n))
}
