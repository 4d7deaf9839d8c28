package expiry_test

import (
	"testing"
	"time"

	"github.com/postern/postern/internal/expiry"
	"github.com/postern/postern/internal/expiry/expirytest"
)

func TestPassed(t *testing.T) {
	start := time.Now()
	end := start.Add(time.Hour)
	for _, c := range []struct {
		name string
		now  time.Time
		want bool
	}{
		{"before the end", start.Add(59 * time.Minute), false},
		{"at the end", end, true},
		{"past the end", start.Add(2 * time.Hour), true},
		// The monotonic clock stood still for two hours of sleep, ten
		// minutes after the start; the wall clock went on.
		{"past the end after a suspend", expirytest.Slept(t, start.Add(10*time.Minute), 2*time.Hour), true},
		{"before the end after a short suspend", expirytest.Slept(t, start.Add(10*time.Minute), 20*time.Minute), false},
		// The wall clock was set back an hour: the monotonic one still
		// ends the lifetime.
		{"past the end on the monotonic clock alone", expirytest.Slept(t, start.Add(2*time.Hour), -3*time.Hour), true},
		{"no end", start.Add(1000 * time.Hour), false},
	} {
		e := end
		if c.name == "no end" {
			e = time.Time{}
		}
		if got := expiry.Passed(c.now, e); got != c.want {
			t.Errorf("%s: Passed = %v, want %v", c.name, got, c.want)
		}
	}
}

// Without Passed, Go compares two times read from time.Now by their
// monotonic readings: the test above is only worth something if
// Slept's times fool that comparison.
func TestSleptFoolsTheMonotonicComparison(t *testing.T) {
	start := time.Now()
	now := expirytest.Slept(t, start.Add(10*time.Minute), 2*time.Hour)
	if !now.Before(start.Add(time.Hour)) {
		t.Fatal("a time after a suspend compares past the end without Passed")
	}
	if now.Round(0).Sub(start.Round(0)) != 130*time.Minute {
		t.Fatalf("wall clock moved %s", now.Round(0).Sub(start.Round(0)))
	}
}
