package main

import (
	"strings"
	"testing"
	"time"
)

func TestParseSince(t *testing.T) {
	loc := time.FixedZone("X", 3600)
	now := time.Date(2026, 12, 3, 10, 30, 0, 0, loc)
	for in, want := range map[string]time.Time{
		"":                          {},
		"90m":                       now.Add(-90 * time.Minute),
		"1h30m":                     now.Add(-90 * time.Minute),
		"3d":                        now.Add(-72 * time.Hour),
		"1w":                        now.Add(-7 * 24 * time.Hour),
		"600":                       now.Add(-10 * time.Minute),
		"2026-12-01":                time.Date(2026, 12, 1, 0, 0, 0, 0, loc),
		"2026-12-01 15:04":          time.Date(2026, 12, 1, 15, 4, 0, 0, loc),
		"2026-12-01T15:04:05":       time.Date(2026, 12, 1, 15, 4, 5, 0, loc),
		"2026-12-01T15:04:05Z":      time.Date(2026, 12, 1, 15, 4, 5, 0, time.UTC),
		"2026-12-01T15:04:05+02:00": time.Date(2026, 12, 1, 13, 4, 5, 0, time.UTC),
	} {
		got, err := parseSinceAt(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("%q: %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"yesterday", "2026-13-01", "1x", "-", "\x1b[2J"} {
		_, err := parseSinceAt(in, now)
		if err == nil || !strings.Contains(err.Error(), "neither a time") || strings.Contains(err.Error(), "\x1b") {
			t.Errorf("%q: %v", in, err)
		}
	}
	for _, in := range []string{"-5m", "-1h30m", "-0.5s", "-3d", "-1w", "-600"} {
		_, err := parseSinceAt(in, now)
		if err == nil || !strings.Contains(err.Error(), "negative duration") {
			t.Errorf("%q: %v, want a negative duration refused", in, err)
		}
	}
}
