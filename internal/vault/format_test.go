package vault

import (
	"bytes"
	"encoding/pem"
	"errors"
	"strings"
	"testing"
)

func TestHeaderRoundTrip(t *testing.T) {
	h := header{params: Params{Time: 4, Memory: 100 << 10, Threads: 8}, meta: map[string]string{"b": "2", "a": "1", "ü": ""}}
	h.salt[0], h.id[15] = 7, 9
	aad, err := h.marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, n, err := parsePrefix(aad)
	if err != nil || n != len(aad) {
		t.Fatal(n, err)
	}
	if got.params != h.params || got.salt != h.salt || got.id != h.id || len(got.meta) != 3 || got.meta["a"] != "1" {
		t.Fatalf("%+v", got)
	}
	again, _ := got.marshal()
	if !bytes.Equal(again, aad) {
		t.Fatal("not canonical")
	}
}

func TestHeaderRejects(t *testing.T) {
	h := header{params: FloorParams(), meta: map[string]string{"a": "1", "b": "2"}}
	aad, _ := h.marshal()
	// Swap the two entries: keys out of order.
	i := bytes.Index(aad, []byte{0, 1, 'a'})
	swapped := bytes.Clone(aad)
	copy(swapped[i:], []byte{0, 1, 'b', 0, 1, '2', 0, 1, 'a', 0, 1, '1'})
	if _, _, err := parsePrefix(swapped); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "order") {
		t.Errorf("unsorted: %v", err)
	}
	dup := bytes.Clone(aad)
	copy(dup[i:], []byte{0, 1, 'a', 0, 1, '1', 0, 1, 'a', 0, 1, '2'})
	if _, _, err := parsePrefix(dup); !errors.Is(err, ErrCorrupt) {
		t.Errorf("duplicate: %v", err)
	}
	bad := bytes.Clone(aad)
	bad[i+2] = 0xff // invalid UTF-8 key
	if _, _, err := parsePrefix(bad); !errors.Is(err, ErrCorrupt) {
		t.Errorf("invalid UTF-8: %v", err)
	}
	v2 := bytes.Clone(aad)
	v2[len(fileMagic)] = 2
	_, _, err := parsePrefix(v2)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "version 2") {
		t.Errorf("version: %v", err)
	}
	if err := withPath(err, "/x/vault"); !strings.Contains(err.Error(), "upgrade postern") {
		t.Errorf("version hint: %v", err)
	}
	for _, s := range []string{"", "POSTERN", "SOMETHING-ELSE-ENTIRELY"} {
		if _, _, err := parsePrefix([]byte(s)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%q: %v", s, err)
		}
	}
}

func TestBodyRoundTrip(t *testing.T) {
	k := newEd25519Key(t, "c")
	b := &body{generation: 42, keys: []Key{k}, secrets: map[string][]byte{"z": {1}, "a": {}, "m": []byte("mmm")}}
	p, err := encodeBody(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(p) != cap(p) {
		t.Errorf("buffer not exactly sized: len %d cap %d", len(p), cap(p))
	}
	got, err := decodeBody(p)
	if err != nil {
		t.Fatal(err)
	}
	if got.generation != 42 || len(got.keys) != 1 || !bytes.Equal(got.keys[0].Private, k.Private) || !got.keys[0].Added.Equal(k.Added) || len(got.secrets) != 3 {
		t.Fatalf("%+v", got)
	}
	// Decoded secrets do not alias the plaintext.
	clear(p)
	if got.keys[0].Private[0] == 0 || got.secrets["m"][0] != 'm' {
		t.Fatal("decoded body aliases the plaintext")
	}
	q, _ := encodeBody(got)
	b2, _ := encodeBody(b)
	if !bytes.Equal(q, b2) {
		t.Fatal("not canonical")
	}
}

func TestEncodePEM(t *testing.T) {
	for n := range 300 {
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(i * 7)
		}
		out := encodePEM("OPENSSH PRIVATE KEY", data)
		block, rest := pem.Decode(out)
		if block == nil || len(rest) != 0 || !bytes.Equal(block.Bytes, data) && n > 0 {
			t.Fatalf("n=%d: %q", n, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if len(line) > pemLineLen && !strings.HasPrefix(line, "-----") {
				t.Fatalf("n=%d: line of %d", n, len(line))
			}
		}
		raw, err := decodeOpenSSHPEM(out)
		if err != nil || !bytes.Equal(raw, data) {
			t.Fatalf("n=%d: decode %v", n, err)
		}
	}
}
