package audit

import (
	"errors"
	"testing"
)

// A reader ratchets a chain no further than a writer seals with one
// (chainMax entries): an entry that names a later position is malformed.
// Anyone can seal entries to the recipient, and each entry of a crafted
// log that names a far position, then position 0 of the same chain, would
// otherwise cost the reader that many hashes: 65,536, some 5 ms, for 400
// bytes of log, so that reading a few megabytes took minutes.
func TestReaderRatchetsNoFurtherThanAWriterSeals(t *testing.T) {
	tl := newTestSetup(t)
	seed, err := newChainSeed(&tl.setup.Recipient)
	if err != nil {
		t.Fatal(err)
	}
	c := startChain(seed)
	pt, err := padEntry([16]byte{}, 1, []byte(`{"type":"sign"}`))
	if err != nil {
		t.Fatal(err)
	}
	o, err := newOpener(tl.setup.Identity)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i <= chainMax; i++ {
		n, key := c.next()
		ct, err := sealV2(c.epk, n, &key, pt)
		if err != nil {
			t.Fatal(err)
		}
		_, err = o.open(version2, [16]byte{}, 1, ct)
		switch {
		case i < chainMax && err != nil:
			t.Fatalf("entry %d of a chain: %v", i, err)
		case i == chainMax && !errors.Is(err, errEntryFormat):
			t.Fatalf("entry %d of a chain, a position no writer seals: %v, want it refused as malformed", i, err)
		}
	}
}
