// Package expirytest makes the times a machine reads after it slept,
// for tests of what ends with a lifetime.
package expirytest

import (
	"testing"
	"time"
	"unsafe"
)

// Slept returns t as read by a machine that then slept for d: its wall
// clock reading d later, its monotonic reading unchanged (Linux's
// CLOCK_MONOTONIC stops during a suspend); a negative d is a wall clock
// set back. t must carry a monotonic
// reading (come from time.Now). The time package offers no way to build
// such a time, so Slept writes the wall seconds of time.Time's layout
// directly, and fails the test if the result is not what it claims.
func Slept(tb testing.TB, t time.Time, d time.Duration) time.Time {
	tb.Helper()
	if d%time.Second != 0 {
		tb.Fatalf("expirytest: a sleep of %s: whole seconds only", d)
	}
	if t.Round(0) == t {
		tb.Fatal("expirytest: the time has no monotonic reading")
	}
	orig := t
	// time.Time with a monotonic reading: wall's bit 63 set, its bits
	// 30 to 62 the seconds since 1885, its low 30 bits the nanoseconds;
	// ext the monotonic reading.
	layout := (*struct {
		wall uint64
		ext  int64
		loc  *time.Location
	})(unsafe.Pointer(&t))
	layout.wall += uint64(int64(d/time.Second)) << 30 // modulo 2^64: a negative d subtracts
	if !t.Round(0).Equal(orig.Round(0).Add(d)) || t.Sub(orig) != 0 {
		tb.Fatalf("expirytest: time.Time's layout is not the one Slept writes (wall %s, monotonic %s apart)",
			t.Round(0).Sub(orig.Round(0)), t.Sub(orig))
	}
	return t
}
