package audit

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

// fuzzSeeds returns real logs: sealed, with an unsealed tail, torn, and
// tampered.
func fuzzSeeds(f *testing.F) [][]byte {
	tl := newTestSetup(f)
	tl.cfg.CheckpointEvery = 3
	l := tl.open(f)
	for i := 0; i < 7; i++ {
		mustAppend(f, l, ev(EventSign, "R1"))
	}
	unsealed := tl.bytes(f)
	l.Close()
	sealed := tl.bytes(f)
	tampered := bytes.Clone(sealed)
	tampered[len(tampered)/2] ^= 0x10
	return [][]byte{
		sealed, unsealed, sealed[:len(sealed)-9], tampered,
		append(bytes.Clone(sealed), make([]byte, 600)...),
		sealed[:frameHeaderSize+3], nil, make([]byte, 64),
	}
}

func FuzzReadFrames(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fr := newFrameReader(bytes.NewReader(data))
		var total int64
		for i := 0; ; i++ {
			fm, err := fr.next()
			if cap(fr.buf) > maxBody+linkSize {
				t.Fatalf("reader buffer grew to %d bytes, beyond the cap", cap(fr.buf))
			}
			if err != nil {
				if t, ok := err.(*tail); ok {
					total += t.n
				}
				break
			}
			if fm.size > maxFrame || fm.off != total {
				t.Fatalf("frame at %d of %d bytes (expected offset %d)", fm.off, fm.size, total)
			}
			total += fm.size
			if i > len(data) {
				t.Fatal("no progress")
			}
		}
		if total > int64(len(data)) {
			t.Fatalf("accounted for %d bytes of %d", total, len(data))
		}
	})
}

func FuzzVerify(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Verify(bytes.NewReader(data), VerifyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Bytes > int64(len(data)) {
			t.Fatalf("verified %d bytes of %d", r.Bytes, len(data))
		}
		if r.Records > 0 && r.Records != 1+r.Entries+r.Checkpoints {
			t.Fatalf("records %d != 1 + %d entries + %d checkpoints", r.Records, r.Entries, r.Checkpoints)
		}
		if r.OK {
			if r.Failure != nil || r.Records < 1 {
				t.Fatalf("ok report with failure %+v", r.Failure)
			}
			n := r.Bytes
			if r.Torn != nil {
				if r.Torn.Offset != r.Bytes {
					t.Fatalf("torn tail at %d, verified part ends at %d", r.Torn.Offset, r.Bytes)
				}
				n += r.Torn.Bytes
			}
			rest := data[n:]
			if r.Version == int(version2) {
				rest = bytes.TrimLeft(rest, "\x00") // free space of a pre-allocated segment
			}
			if len(rest) != 0 {
				t.Fatalf("ok report covers %d of %d bytes", n, len(data))
			}
		} else if r.Failure == nil {
			t.Fatal("failed report without a finding")
		}
	})
}

// FuzzParseKeyStrings reads the pin and the recipient as the state files
// hold them (another program of the person's can write them): one read
// is written back as the same key, and only 32 bytes are a key.
func FuzzParseKeyStrings(f *testing.F) {
	f.Add(FormatPK0(make([]byte, 32)))
	f.Add(FormatRecipient([32]byte{1, 2, 3}) + "\n")
	f.Add(" " + pk0Prefix + "AAAA====\r\n")
	f.Add(recipientPrefix + "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\nAA")
	f.Fuzz(func(t *testing.T, s string) {
		if pk, err := ParsePK0(s); err == nil {
			if len(pk) != 32 {
				t.Fatalf("%q read as a pin of %d bytes", s, len(pk))
			}
			if again, err := ParsePK0(FormatPK0(pk)); err != nil || !bytes.Equal(again, pk) {
				t.Fatalf("%q read as %x, which does not read back (%v)", s, pk, err)
			}
		}
		if r, err := ParseRecipient(s); err == nil {
			if again, err := ParseRecipient(FormatRecipient(r)); err != nil || again != r {
				t.Fatalf("%q read as %x, which does not read back (%v)", s, r, err)
			}
		}
	})
}

// FuzzUnpadEntry reads the plaintext of a decrypted entry, which anyone
// with the recipient's public key can seal: what is taken is the event
// padEntry wrote, followed by nothing but zeros.
func FuzzUnpadEntry(f *testing.F) {
	logID := [16]byte{1, 2, 3}
	for _, js := range []string{`{"type":"sign"}`, "", strings.Repeat("x", padBucket)} {
		pt, err := padEntry(logID, 7, []byte(js))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(pt)
		f.Add(append(pt, make([]byte, padBucket)...))
	}
	huge, _ := padEntry(logID, 7, nil)
	binary.BigEndian.PutUint32(huge[24:28], 1<<32-1)
	f.Add(huge)
	f.Fuzz(func(t *testing.T, pt []byte) {
		var seq uint64
		if len(pt) >= 24 { // sealed for this log and seq, or the fuzzer would never get past them
			copy(logID[:], pt)
			seq = binary.BigEndian.Uint64(pt[16:24])
		}
		js, err := unpadEntry(logID, seq, pt)
		if err != nil {
			return
		}
		again, err := padEntry(logID, seq, js)
		if err != nil || !bytes.HasPrefix(pt, again) || !allZero(pt[len(again):]) {
			t.Fatalf("%x read as %q, which pads to %x (%v)", pt, js, again, err)
		}
	})
}
