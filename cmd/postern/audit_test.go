package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/gateway/api"
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

// FuzzParseSince reads --since. A duration is counted back, never
// forward, a time is itself, and a refusal quotes what was given on one
// line without any byte a terminal would act on.
func FuzzParseSince(f *testing.F) {
	for _, s := range []string{"", "90m", "1h30m", "3d", "1w", "600", "-5m", "-0.5s", "-0", "2026-12-01", "2026-12-01 15:04",
		"2026-12-01T15:04:05+02:00", "9999-12-31T23:59:59Z", "2562047h", "2562048h", "\x1b[2J", "x\ny", "yesterday\u202e"} {
		f.Add(s)
	}
	now := time.Date(2026, 12, 3, 10, 30, 0, 0, time.FixedZone("X", 3600))
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseSinceAt(s, now)
		if err != nil {
			if msg := err.Error(); strings.ContainsAny(msg, "\x00\x1b\n\r\x7f\u009b") || strings.ContainsFunc(msg, func(r rune) bool { return r < ' ' }) {
				t.Fatalf("%q refused as %q", s, msg)
			}
			return
		}
		if d, ok := durationAgo(s); ok {
			if got.After(now) || now.Sub(got) != d {
				t.Fatalf("%q, %v ago, read as %v from %v", s, d, got, now)
			}
		} else if got.IsZero() != (s == "") {
			t.Fatalf("%q read as %v", s, got)
		}
	})
}

// In a log of several segments, verify names the file that holds the
// first bad record, and the offset is in that file.
func TestVerifyNamesTheSegmentOfTheFirstBadRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	s, err := audit.NewSetup(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	l, err := audit.Open(s.Config(path))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 30; i++ {
		e := audit.Event{Type: audit.EventSign, Run: "R1", Detail: map[string]string{"x": strings.Repeat("a", 50<<10)}}
		if err := l.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	seg := path + ".000001"
	f, err := os.OpenFile(seg, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Flip the byte: set to a value, a ciphertext byte may hold it already.
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{b[0] ^ 0xff}, 100); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var out, errw strings.Builder
	err = auditVerify([]string{path}, &out, &errw)
	if e, ok := err.(*exitError); !ok || e.code != exitAudit {
		t.Fatalf("verify of a damaged log: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "first bad record: seq ") || !strings.Contains(out.String(), " of audit.log.000001: ") {
		t.Fatalf("verify does not name the segment of the first bad record:\n%s", out.String())
	}
}

// A torn last record in a later segment is named with its file, as the
// first bad record is: the warning gave an offset with no file, which
// in a log of several segments points at nothing.
func TestVerifyNamesTheSegmentOfATornRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	for _, c := range []struct{ file, want string }{
		{"audit.log.000001", "torn last record (a crash while writing): 120 bytes at byte 4096 of audit.log.000001\n"},
		{"audit.log", "torn last record (a crash while writing): 120 bytes at byte 4096\n"},
	} {
		var out strings.Builder
		printReport(&out, path, "", nil, &api.AuditReport{OK: true, Torn: &audit.Torn{File: c.file, Offset: 4096, Bytes: 120}})
		if !strings.Contains(out.String(), c.want) {
			t.Errorf("a torn record in %s:\n%s", c.file, out.String())
		}
	}
}
