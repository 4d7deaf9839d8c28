package vault

import (
	"encoding/binary"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"
)

// Body plaintext layout (big-endian), sealed with the data key:
//
//	u8  version      1
//	u64 generation   bumped by every save
//	u32 n            keys, in insertion order
//	n × (u16 len, comment, i64 added unix seconds, u32 added nanoseconds,
//	     u32 len, private key PEM)
//	u32 m            secrets, names strictly increasing
//	m × (u16 len, name, u32 len, value)
//
// A hand-written binary encoding rather than JSON: encoding/json keeps
// copies of what it encodes in pooled buffers that cannot be wiped, while
// this encoder writes into one exactly sized buffer that Save clears.
const (
	bodyVersion   = 1
	maxComment    = 4096
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
	for i, k := range b.keys {
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
	out := make([]byte, 0, size)
	out = append(out, bodyVersion)
	out = binary.BigEndian.AppendUint64(out, b.generation)
	out = binary.BigEndian.AppendUint32(out, uint32(len(b.keys)))
	for _, k := range b.keys {
		out = binary.BigEndian.AppendUint16(out, uint16(len(k.Comment)))
		out = append(out, k.Comment...)
		out = binary.BigEndian.AppendUint64(out, uint64(k.Added.Unix()))
		out = binary.BigEndian.AppendUint32(out, uint32(k.Added.Nanosecond()))
		out = binary.BigEndian.AppendUint32(out, uint32(len(k.Private)))
		out = append(out, k.Private...)
	}
	out = binary.BigEndian.AppendUint32(out, uint32(len(names)))
	for _, name := range names {
		v := b.secrets[name]
		out = binary.BigEndian.AppendUint16(out, uint16(len(name)))
		out = append(out, name...)
		out = binary.BigEndian.AppendUint32(out, uint32(len(v)))
		out = append(out, v...)
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
	c := cursor{b: p}
	if v := c.u8(); c.short {
		return nil, corrupt("body is empty")
	} else if v != bodyVersion {
		return nil, corrupt("unknown body version %d", v)
	}
	b.generation = c.u64()
	n := c.u32()
	if c.short {
		return nil, corrupt("body is truncated")
	}
	for i := range n {
		comment := c.take(int(c.u16()))
		sec := int64(c.u64())
		nsec := c.u32()
		priv := c.take(int(c.u32()))
		if c.short {
			return nil, corrupt("body is truncated in key %d", i)
		}
		switch {
		case len(comment) > maxComment:
			return nil, corrupt("key %d: comment is longer than %d bytes", i, maxComment)
		case sec < minUnix || sec > maxUnix || nsec >= 1e9:
			return nil, corrupt("key %d: invalid time", i)
		case len(priv) == 0:
			return nil, corrupt("key %d: empty private key", i)
		}
		b.keys = append(b.keys, Key{
			Comment: string(comment),
			Private: slices.Clone(priv),
			Added:   time.Unix(sec, int64(nsec)).UTC(),
		})
	}
	m := c.u32()
	if c.short {
		return nil, corrupt("body is truncated before the secrets")
	}
	prev := ""
	for i := range m {
		name := c.take(int(c.u16()))
		v := c.take(int(c.u32()))
		if c.short {
			return nil, corrupt("body is truncated in secret %d", i)
		}
		s := string(name)
		if err := validateSecretName(s); err != nil {
			return nil, corrupt("secret %d: %v", i, err)
		}
		if i > 0 && s <= prev {
			return nil, corrupt("secret names are not in strictly increasing order")
		}
		prev = s
		b.secrets[s] = slices.Clone(v)
	}
	if len(c.b) != 0 {
		return nil, corrupt("%d unexpected bytes at the end of the body", len(c.b))
	}
	return b, nil
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
