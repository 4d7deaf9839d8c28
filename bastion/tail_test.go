package bastion

import (
	"testing"
)

func TestTail(t *testing.T) {
	tl := newTail(8)
	tl.write([]byte("abc"))
	tl.write([]byte("defghij"))
	if got := string(tl.bytes()); got != "cdefghij" {
		t.Fatalf("tail %q", got)
	}
	tl.write([]byte("0123456789"))
	if got := string(tl.bytes()); got != "23456789" {
		t.Fatalf("tail %q", got)
	}
}
