// Package expiry says whether a lifetime has ended.
//
// A time.Time read from time.Now carries a monotonic clock reading, and
// Go compares two such times by it alone. On Linux that clock stops while
// the machine sleeps, so a lifetime of an hour measured on it outlives
// its end on the wall clock by the length of every suspend: a grant or a
// key approved before a laptop's lid closed would still sign the morning
// after. [Passed] counts a lifetime as ended when either clock says it
// has: the monotonic one, which a step of the wall clock cannot move
// back, and the wall clock, which goes on while the machine sleeps.
//
// Timers (time.AfterFunc) run on the monotonic clock too, and fire late
// after a suspend; whatever a timer ends must also be checked with
// Passed where it is used and where it is listed.
package expiry

import "time"

// Passed reports whether now is at or past end on either clock. A zero
// end is no end: it never passes.
func Passed(now, end time.Time) bool {
	if end.IsZero() {
		return false
	}
	return !now.Before(end) || !now.Round(0).Before(end.Round(0))
}
