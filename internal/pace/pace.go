// Package pace keeps how often each requester may do something: a token
// bucket per key, which allows a burst at once and a steady rate after
// it.
//
// A Set follows a bounded number of keys, so that a requester who makes
// up new keys (new processes) cannot make it grow without end: past Max,
// the keys whose buckets are full and whose values hold nothing are
// forgotten, and if that frees no room, a new key shares the bucket of
// the key "" (which is never forgotten).
//
// A Set is not safe for concurrent use: its user holds a lock of its own
// around it, with whatever else the user keeps per key (T).
package pace

import "time"

// A Set holds a bucket, and a value of the user's, per key.
type Set[T any] struct {
	Burst float64 // tokens a full bucket holds
	Rate  float64 // tokens added a second
	Max   int     // keys followed at most
	// Idle reports whether a value holds nothing the user still needs;
	// nil means every value is idle.
	Idle func(*T) bool

	by map[string]*Entry[T]
}

// An Entry is one key's bucket and value.
type Entry[T any] struct {
	Val    T
	tokens float64
	at     time.Time // when tokens was last refilled
}

// Get returns key's entry, its bucket full when it is new.
func (s *Set[T]) Get(key string, now time.Time) *Entry[T] {
	if e := s.by[key]; e != nil {
		return e
	}
	if s.by == nil {
		s.by = map[string]*Entry[T]{}
	}
	if len(s.by) >= s.Max {
		for k, e := range s.by {
			if k != "" && e.level(s, now) >= s.Burst && (s.Idle == nil || s.Idle(&e.Val)) {
				delete(s.by, k)
			}
		}
		if len(s.by) >= s.Max {
			key = ""
			if e := s.by[key]; e != nil {
				return e
			}
		}
	}
	e := &Entry[T]{tokens: s.Burst, at: now}
	s.by[key] = e
	return e
}

// Peek returns key's own entry, if the set follows key: never a new one,
// nor the entry a new key would share past Max.
func (s *Set[T]) Peek(key string) (*Entry[T], bool) {
	e, ok := s.by[key]
	return e, ok
}

// Take takes a token from key's bucket at now, and reports whether there
// was one.
func (s *Set[T]) Take(e *Entry[T], now time.Time) bool {
	e.tokens, e.at = e.level(s, now), now
	if e.tokens < 1 {
		return false
	}
	e.tokens--
	return true
}

// level is how many tokens e's bucket holds at now.
func (e *Entry[T]) level(s *Set[T], now time.Time) float64 {
	return min(s.Burst, e.tokens+now.Sub(e.at).Seconds()*s.Rate)
}

// Keys returns the keys followed.
func (s *Set[T]) Keys() []string {
	keys := make([]string, 0, len(s.by))
	for k := range s.by {
		keys = append(keys, k)
	}
	return keys
}
