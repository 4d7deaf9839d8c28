package main

import (
	"io"
	"strings"
	"testing"
)

// cardLine returns the card goal's line of the report of out.
func cardLine(t *testing.T, out string) string {
	t.Helper()
	m, err := parse(strings.NewReader(out), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	report(&b, m)
	for line := range strings.Lines(b.String()) {
		if strings.HasPrefix(line, "request to approver") {
			return line
		}
	}
	t.Fatalf("no card goal in\n%s", b.String())
	return ""
}

func TestCardGoalNeedsTheCardsPending(t *testing.T) {
	for _, c := range []struct{ name, out, want string }{
		{"held", "BenchmarkCardToConsole-2 100 5 gateway-cpu-µs/op 900 median-µs 1900 p99-µs 100 pending-cards 3000 worst-µs\n", "PASS"},
		{"too slow", "BenchmarkCardToConsole-2 100 5 gateway-cpu-µs/op 900 median-µs 2100 p99-µs 100 pending-cards 3000 worst-µs\n", "MISS\n"},
		{"fewer cards", "BenchmarkCardToConsole-2 100 5 gateway-cpu-µs/op 900 median-µs 1900 p99-µs 10 pending-cards 3000 worst-µs\n", "MISS: measured with BenchmarkCardToConsole pending-cards 10"},
		{"cards not reported", "BenchmarkCardToConsole-2 100 5 gateway-cpu-µs/op 900 median-µs 1900 p99-µs 3000 worst-µs\n", "MISS: measured with"},
	} {
		if line := cardLine(t, c.out); !strings.Contains(line, c.want) {
			t.Errorf("%s: %q", c.name, line)
		}
	}
}

// The goals' report says which configuration the signing goals measure,
// so that no figure reads as the default's where it is not.
func TestReportStatesTheConfiguration(t *testing.T) {
	var b strings.Builder
	report(&b, metrics{})
	for _, want := range []string{`approval = "none"`, `approval = "session" (the default)`, "audit log on"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the report does not say %s:\n%s", want, b.String())
		}
	}
}
