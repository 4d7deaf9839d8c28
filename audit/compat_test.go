package audit

import (
	"bytes"
	"encoding/hex"
	"os"
	"strings"
	"testing"
)

// testdata/v1 holds a log written by the version 1 writer (one file,
// appended, entries in anonymous boxes), with its setup: 10 sign events
// and a gateway_stopped, a checkpoint every 4 entries, the last 3 entries
// unsealed. Every later version must verify and read it.
func v1Fixture(t testing.TB) (log []byte, pin VerifyOptions, identity [32]byte) {
	t.Helper()
	log, err := os.ReadFile("testdata/v1/audit.log")
	if err != nil {
		t.Fatal(err)
	}
	p, err := os.ReadFile("testdata/v1/audit.pin")
	if err != nil {
		t.Fatal(err)
	}
	pk0, err := ParsePK0(string(p))
	if err != nil {
		t.Fatal(err)
	}
	h, err := os.ReadFile("testdata/v1/identity.hex")
	if err != nil {
		t.Fatal(err)
	}
	id, err := hex.DecodeString(strings.TrimSpace(string(h)))
	if err != nil || len(id) != 32 {
		t.Fatalf("identity: %v", err)
	}
	return log, VerifyOptions{PK0: pk0}, [32]byte(id)
}

func TestVersion1LogVerifiesAndReads(t *testing.T) {
	log, pin, id := v1Fixture(t)
	r := verifyBytes(t, log, pin)
	if !r.OK || r.Entries != 11 || r.Checkpoints != 3 || r.UnsealedEntries != 3 || r.Torn != nil {
		t.Fatalf("version 1 log: %s entries=%d checkpoints=%d unsealed=%d", describe(r), r.Entries, r.Checkpoints, r.UnsealedEntries)
	}
	var signs []string
	_, err := DecodeEvents(bytes.NewReader(log), id, pin, func(e Event) error {
		if e.Type == EventSign {
			signs = append(signs, e.Detail["i"])
		}
		return nil
	})
	if err != nil || strings.Join(signs, "") != "abcdefghij" {
		t.Fatalf("decoded %q, %v", signs, err)
	}
}
