package vault

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// region names the part of the file byte i belongs to.
func region(fp *fileParts, i int) string {
	switch {
	case i < len(fileMagic)+1:
		return "magic"
	case i < prefixSize:
		return "header length"
	case i < prefixSize+1:
		return "kdf"
	case i < prefixSize+10:
		return "params"
	case i < prefixSize+10+saltSize:
		return "salt"
	case i < len(fp.aad):
		return "header"
	case i < len(fp.aad)+4:
		return "wrap length"
	case i < len(fp.aad)+4+checkSize:
		return "check"
	case i < len(fp.aad)+4+wrapSize:
		return "wrapped key"
	case i < len(fp.aad)+4+wrapSize+4:
		return "body length"
	}
	return "body"
}

// TestTamperEveryByte flips bits in every byte of a vault: each change
// must be refused, and never panic. Edits of the salt, the parameters or
// the key check look like a wrong passphrase; every other edit is
// reported as corruption.
func TestTamperEveryByte(t *testing.T) {
	useFastKDF(t)
	v, path := newTestVault(t)
	dk, err := v.DataKey()
	if err != nil {
		t.Fatal(err)
	}
	defer dk.Wipe()
	orig := mustRead(t, path)
	fp, err := parseFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	mut := make([]byte, len(orig))
	for i := range orig {
		for _, mask := range []byte{0x01, 0x80} {
			copy(mut, orig)
			mut[i] ^= mask
			mustWrite(t, path, mut)
			r := region(fp, i)
			w, err := Open(path, testPass)
			if err == nil {
				w.Wipe()
				t.Fatalf("byte %d (%s) ^%#x: opened", i, r, mask)
			}
			switch r {
			case "params", "salt", "check":
				if !errors.Is(err, ErrWrongPassphrase) && !errors.Is(err, ErrCorrupt) {
					t.Fatalf("byte %d (%s): %v", i, r, err)
				}
			default:
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("byte %d (%s): want ErrCorrupt, got %v", i, r, err)
				}
			}
			w, err = OpenWithKey(path, dk)
			if err == nil {
				w.Wipe()
				t.Fatalf("byte %d (%s) ^%#x: opened with data key", i, r, mask)
			}
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrStaleKey) {
				t.Fatalf("byte %d (%s) with data key: %v", i, r, err)
			}
		}
	}
	// The untouched file still opens and a save over it still works.
	mustWrite(t, path, orig)
	w, err := Open(path, testPass)
	if err != nil {
		t.Fatal(err)
	}
	w.Wipe()
}

func TestTruncatedAndExtended(t *testing.T) {
	useFastKDF(t)
	_, path := newTestVault(t)
	orig := mustRead(t, path)
	fp, _ := parseFile(orig)
	for n := range len(orig) {
		mustWrite(t, path, orig[:n])
		_, err := Open(path, testPass)
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d: %v", n, err)
		}
		// ReadMeta needs the header only.
		if _, _, err := ReadMeta(path); (err == nil) != (n >= len(fp.aad)) {
			t.Fatalf("ReadMeta of %d bytes: %v", n, err)
		}
	}
	mustWrite(t, path, append(slices.Clone(orig), 0))
	if _, err := Open(path, testPass); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "unexpected bytes") {
		t.Fatalf("extended: %v", err)
	}
}

// TestOversizedLengths checks that huge lengths are refused before any
// allocation of that size.
func TestOversizedLengths(t *testing.T) {
	useFastKDF(t)
	_, path := newTestVault(t)
	orig := mustRead(t, path)
	fp, _ := parseFile(orig)
	set32 := func(b []byte, off int, v uint32) []byte {
		b = slices.Clone(b)
		b[off], b[off+1], b[off+2], b[off+3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
		return b
	}
	for name, data := range map[string][]byte{
		"header": set32(orig, len(fileMagic)+1, 0xffffffff),
		"wrap":   set32(orig, len(fp.aad), 0xffffffff),
		"body":   set32(orig, len(fp.aad)+4+wrapSize, 0xffffffff),
	} {
		_, err := parseFile(data)
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "length") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestParamsBelowFloor builds a file that is authentic in every respect
// except that its parameters are below the floor: it must be refused.
func TestParamsBelowFloor(t *testing.T) {
	useFastKDF(t)
	v, path := newTestVault(t)
	weak := Params{Time: 1, Memory: 8 << 10, Threads: 1}
	hdr := v.hdr
	hdr.params = weak
	// hdr.marshal refuses weak parameters; patch them into a copy of the
	// encoded header instead.
	aad := slices.Clone(v.aad)
	off := prefixSize + 1
	aad[off], aad[off+1], aad[off+2], aad[off+3] = 0, 0, 0, byte(weak.Time)
	aad[off+4], aad[off+5], aad[off+6], aad[off+7] = 0, 0, byte(weak.Memory>>8), byte(weak.Memory)
	aad[off+8] = weak.Threads
	kek := deriveKEK(testPass, hdr.salt[:], weak)
	wrap := wrapKey(kek, v.dek, aad)
	prefix := bodyAAD(aad, wrap)
	sealed, err := sealBody(v.dek, prefix, &body{generation: 9, keys: v.keys, secrets: v.secrets})
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, path, assemble(prefix, sealed))

	_, err = Open(path, testPass)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "below the floor") {
		t.Fatalf("Open: %v", err)
	}
	if _, _, err := ReadMeta(path); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("ReadMeta: %v", err)
	}
	dk, _ := v.DataKey()
	defer dk.Wipe()
	if _, err := OpenWithKey(path, dk); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("OpenWithKey: %v", err)
	}
	// ChangePassphrase keeps the floor too.
	if err := v.ChangePassphrase([]byte("new"), weak); err == nil {
		t.Fatal("ChangePassphrase accepted weak parameters")
	}
}
