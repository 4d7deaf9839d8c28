package vault

import (
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"golang.org/x/crypto/cryptobyte"
)

// Body plaintext layout (big-endian), sealed with the data key:
//
//	u8  version      1, or 2 when a key has certificates
//	u64 generation   bumped by every save
//	u32 n            keys, in insertion order
//	n × (u16 len, comment, i64 added unix seconds, u32 added nanoseconds,
//	     u32 len, private key PEM,
//	     version 2 only: u16 c certificates, c × (u32 len, certificate
//	     in SSH wire format))
//	u32 m            secrets, names strictly increasing
//	m × (u16 len, name, u32 len, value)
//
// A binary encoding (cryptobyte) rather than JSON: encoding/json keeps
// copies of what it encodes in pooled buffers that cannot be wiped, while
// this encoder writes into one exactly sized buffer that Save clears.
const (
	bodyVersion   = 1
	bodyVersion2  = 2 // with certificates
	maxComment    = 4096
	maxCerts      = 16        // certificates per key
	maxCertLen    = 16 * 1024 // bytes per certificate
	maxSecretName = 255

	minUnix = -62135596800 // 0001-01-01T00:00:00Z
	maxUnix = 253402300799 // 9999-12-31T23:59:59Z
)

type body struct {
	generation uint64
	keys       []Key
	secrets    map[string][]byte
}

func validateSecretName(name string) error {
	if name == "" || len(name) > maxSecretName || !utf8.ValidString(name) {
		return fmt.Errorf("secret name %q must be 1 to %d bytes of UTF-8", name, maxSecretName)
	}
	return nil
}

// encodeBody returns the plaintext body in a buffer of exactly the right
// size. The caller clears it.
func encodeBody(b *body) ([]byte, error) {
	size := 1 + 8 + 4 + 4
	version := uint8(bodyVersion)
	for _, k := range b.keys {
		if len(k.Certs) > 0 {
			version = bodyVersion2
		}
	}
	for i, k := range b.keys {
		if len(k.Certs) > maxCerts {
			return nil, fmt.Errorf("key %d: more than %d certificates", i, maxCerts)
		}
		if version == bodyVersion2 {
			size += 2
		}
		for _, c := range k.Certs {
			if len(c) == 0 || len(c) > maxCertLen {
				return nil, fmt.Errorf("key %d: certificate of %d bytes", i, len(c))
			}
			size += 4 + len(c)
		}
		if len(k.Comment) > maxComment {
			return nil, fmt.Errorf("key %d: comment is longer than %d bytes", i, maxComment)
		}
		if len(k.Private) == 0 {
			return nil, fmt.Errorf("key %d: no private key", i)
		}
		if s := k.Added.Unix(); s < minUnix || s > maxUnix {
			return nil, fmt.Errorf("key %d: added time %v is out of range", i, k.Added)
		}
		size += 2 + len(k.Comment) + 8 + 4 + 4 + len(k.Private)
	}
	names := make([]string, 0, len(b.secrets))
	for name, v := range b.secrets {
		if err := validateSecretName(name); err != nil {
			return nil, err
		}
		names = append(names, name)
		size += 2 + len(name) + 4 + len(v)
	}
	if size > maxBodyPlain {
		return nil, fmt.Errorf("vault contents would be %d bytes, more than the %d MiB limit", size, maxBodyPlain>>20)
	}
	slices.Sort(names)
	// A fixed builder writes into buf and never reallocates it, so no
	// partial copy of the plaintext is left behind.
	buf := make([]byte, 0, size)
	w := cryptobyte.NewFixedBuilder(buf)
	w.AddUint8(version)
	w.AddUint64(b.generation)
	w.AddUint32(uint32(len(b.keys)))
	for _, k := range b.keys {
		addUint16String(w, k.Comment)
		w.AddUint64(uint64(k.Added.Unix()))
		w.AddUint32(uint32(k.Added.Nanosecond()))
		addUint32Bytes(w, k.Private)
		if version == bodyVersion2 {
			w.AddUint16(uint16(len(k.Certs)))
			for _, c := range k.Certs {
				addUint32Bytes(w, c)
			}
		}
	}
	w.AddUint32(uint32(len(names)))
	for _, name := range names {
		addUint16String(w, name)
		addUint32Bytes(w, b.secrets[name])
	}
	out, err := w.Bytes()
	if err != nil {
		clear(buf[:cap(buf)])
		return nil, fmt.Errorf("encode vault contents: %w", err)
	}
	return out, nil
}

// decodeBody parses a plaintext body. Every secret byte is copied into a
// fresh slice owned by the result, so the caller can clear p afterwards.
// Errors are corruptErrors.
func decodeBody(p []byte) (_ *body, err error) {
	if len(p) > maxBodyPlain {
		return nil, corrupt("body is %d bytes, over the %d MiB limit", len(p), maxBodyPlain>>20)
	}
	b := &body{secrets: map[string][]byte{}}
	defer func() {
		if err != nil {
			wipeBody(b) // the partial result is dropped: clear what was copied
		}
	}()
	s := cryptobyte.String(p)
	var version uint8
	if !s.ReadUint8(&version) {
		return nil, corrupt("body is empty")
	}
	switch {
	case version > bodyVersion2:
		// Authenticated: a later postern wrote it, nobody edited it.
		return nil, newerFormat("body", version, bodyVersion2)
	case version != bodyVersion && version != bodyVersion2:
		return nil, corrupt("unknown body version %d", version)
	}
	anyCerts := false
	var n uint32
	if !s.ReadUint64(&b.generation) || !s.ReadUint32(&n) {
		return nil, corrupt("body is truncated")
	}
	for i := range n {
		var (
			comment cryptobyte.String
			sec     uint64
			nsec    uint32
			priv    []byte
		)
		if !s.ReadUint16LengthPrefixed(&comment) ||
			!s.ReadUint64(&sec) ||
			!s.ReadUint32(&nsec) ||
			!readUint32Bytes(&s, &priv) {
			return nil, corrupt("body is truncated in key %d", i)
		}
		switch unix := int64(sec); {
		case len(comment) > maxComment:
			return nil, corrupt("key %d: comment is longer than %d bytes", i, maxComment)
		case unix < minUnix || unix > maxUnix || nsec >= 1e9:
			return nil, corrupt("key %d: invalid time", i)
		case len(priv) == 0:
			return nil, corrupt("key %d: empty private key", i)
		}
		k := Key{
			Comment: string(comment),
			Private: slices.Clone(priv),
			Added:   time.Unix(int64(sec), int64(nsec)).UTC(),
		}
		b.keys = append(b.keys, k)
		if version == bodyVersion2 {
			certs, err := readCerts(&s, i)
			if err != nil {
				return nil, err
			}
			b.keys[len(b.keys)-1].Certs = certs
			anyCerts = anyCerts || len(certs) > 0
		}
	}
	if version == bodyVersion2 && !anyCerts {
		return nil, corrupt("body version 2 without certificates")
	}
	var m uint32
	if !s.ReadUint32(&m) {
		return nil, corrupt("body is truncated before the secrets")
	}
	prev := ""
	for i := range m {
		var (
			name cryptobyte.String
			v    []byte
		)
		if !s.ReadUint16LengthPrefixed(&name) || !readUint32Bytes(&s, &v) {
			return nil, corrupt("body is truncated in secret %d", i)
		}
		n := string(name)
		if err := validateSecretName(n); err != nil {
			return nil, corrupt("secret %d: %v", i, err)
		}
		if i > 0 && n <= prev {
			return nil, corrupt("secret names are not in strictly increasing order")
		}
		prev = n
		b.secrets[n] = slices.Clone(v)
	}
	if !s.Empty() {
		return nil, corrupt("%d unexpected bytes at the end of the body", len(s))
	}
	return b, nil
}

// readCerts reads the certificates of key i (body version 2).
func readCerts(s *cryptobyte.String, i uint32) ([][]byte, error) {
	var c uint16
	if !s.ReadUint16(&c) {
		return nil, corrupt("body is truncated in key %d", i)
	}
	if c > maxCerts {
		return nil, corrupt("key %d: %d certificates", i, c)
	}
	var out [][]byte
	for range c {
		var cert []byte
		if !readUint32Bytes(s, &cert) {
			return nil, corrupt("body is truncated in the certificates of key %d", i)
		}
		if len(cert) == 0 || len(cert) > maxCertLen {
			return nil, corrupt("key %d: certificate of %d bytes", i, len(cert))
		}
		out = append(out, slices.Clone(cert))
	}
	return out, nil
}

// wipeBody zeroes every secret byte b holds.
func wipeBody(b *body) {
	if b == nil {
		return
	}
	for i := range b.keys {
		b.keys[i].Wipe()
	}
	for _, v := range b.secrets {
		clear(v)
	}
}
