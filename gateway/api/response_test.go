package api

import (
	"strings"
	"testing"
)

// A change of the pending cards is decoded with its line, in one pass:
// the change, the open stream's empty line, an error with its code, and
// a line that is not JSON.
func TestDecodeResultOfAChange(t *testing.T) {
	d, err := decodeResult[CardsDelta]([]byte(`{"result":{"seq":7,"since":5,"cards":[{"id":"C1","created":"2026-01-01T00:00:00Z","expires":"2026-01-01T00:01:00Z"}],"gone":["C0"]}}`))
	if err != nil || d == nil || d.Seq != 7 || d.Since != 5 || len(d.Cards) != 1 || d.Cards[0].ID != "C1" || len(d.Gone) != 1 || d.Gone[0] != "C0" {
		t.Fatalf("a change: %+v, %v", d, err)
	}
	if d, err := decodeResult[CardsDelta]([]byte(`{}`)); d != nil || err != nil {
		t.Fatalf("the open stream's line: %+v, %v", d, err)
	}
	if _, err := decodeResult[CardsDelta]([]byte(`{"error":"the requesting process changed ","code":"denied"}`)); !HasCode(err, CodeDenied) || err.Error() != "the requesting process changed" {
		t.Fatalf("an error line: %v", err)
	}
	if _, err := decodeResult[CardsDelta]([]byte(`{"result":{"seq":`)); err == nil || !strings.Contains(err.Error(), "malformed answer") {
		t.Fatalf("a line cut short: %v", err)
	}
}
