package gateway

import (
	"testing"
	"time"
)

// A stopping gateway waits for what it cut, but not without end: a wait
// that does not return in time is given up (and the caller warns).
func TestWaitAtMost(t *testing.T) {
	if !waitAtMost(time.Second, func() {}) {
		t.Fatal("a wait that returned at once was given up")
	}
	block := make(chan struct{})
	defer close(block)
	start := time.Now()
	if waitAtMost(50*time.Millisecond, func() { <-block }) {
		t.Fatal("a wait that never returned was reported done")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("giving up took %v", d)
	}
}
