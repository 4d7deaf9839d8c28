package pace

import (
	"strconv"
	"testing"
	"time"
)

func TestBurstThenRate(t *testing.T) {
	s := &Set[int]{Burst: 4, Rate: 2, Max: 8}
	now := time.Unix(1000, 0)
	e := s.Get("a", now)
	for i := range 4 {
		if !s.Take(e, now) {
			t.Fatalf("take %d of a full bucket refused", i+1)
		}
	}
	if s.Take(e, now) {
		t.Fatal("an empty bucket gave a token")
	}
	if other := s.Get("b", now); !s.Take(other, now) {
		t.Fatal("another key's bucket was empty")
	}
	now = now.Add(time.Second)
	if !s.Take(e, now) || !s.Take(e, now) || s.Take(e, now) {
		t.Fatal("a second later, not exactly 2 tokens")
	}
	now = now.Add(time.Hour)
	n := 0
	for s.Take(e, now) {
		n++
	}
	if n != 4 {
		t.Fatalf("an hour later, %d tokens, want the burst, 4", n)
	}
}

// Past Max keys, full and idle buckets are forgotten; when none is, new
// keys share one bucket, and the set never holds more than Max+1.
func TestBounded(t *testing.T) {
	s := &Set[int]{Burst: 1, Rate: 1, Max: 4, Idle: func(v *int) bool { return *v == 0 }}
	now := time.Unix(1000, 0)
	for i := range 4 {
		e := s.Get(strconv.Itoa(i), now)
		e.Val = 1 // holding something: never forgotten
		s.Take(e, now)
	}
	shared := s.Get("new-1", now)
	if s.Get("new-2", now) != shared || !s.Take(shared, now) || s.Take(s.Get("new-3", now), now) {
		t.Fatal("new keys past the bound do not share one bucket")
	}
	if n := len(s.Keys()); n != 5 {
		t.Fatalf("%d keys followed, want 4 and the shared one", n)
	}
	// Peek shows a key's own entry only: not the one it would share.
	if e, ok := s.Peek("0"); !ok || e.Val != 1 {
		t.Fatal("Peek does not find a key followed")
	}
	if _, ok := s.Peek("new-5"); ok {
		t.Fatal("Peek gave a key past the bound the shared entry")
	}
	for i := range 4 {
		s.Get(strconv.Itoa(i), now).Val = 0
	}
	now = now.Add(time.Minute)
	if e := s.Get("new-4", now); e == shared || !s.Take(e, now) {
		t.Fatal("the full, idle buckets were not forgotten to make room")
	}
	if n := len(s.Keys()); n > 5 {
		t.Fatalf("%d keys followed", n)
	}
}
