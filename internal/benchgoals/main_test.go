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
	for _, want := range []string{`approval = "none"`, `no configuration file (approval = "session"`, "audit log on"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the report does not say %s:\n%s", want, b.String())
		}
	}
}

// The headline row is the default configuration's, read from
// BenchmarkSignDefault, and comes before the rows under approval = "none".
func TestHeadlineIsTheDefaultConfiguration(t *testing.T) {
	for _, c := range []struct{ name, out, want string }{
		{"held", "BenchmarkSignDefault-2 3 1 ns/op 600.0 conn-default-µs 650.0 conn-ssh-agent-µs 350.0 seq-default-µs 600.0 seq-ssh-agent-µs 1.083 x-conn-default-vs-ssh-agent 1.714 x-seq-default-vs-ssh-agent\n",
			"350.0 µs  ssh-agent 600.0 µs  1.714 x faster  ≥ 1.5  PASS"},
		{"missed", "BenchmarkSignDefault-2 3 1 ns/op 500.0 seq-default-µs 600.0 seq-ssh-agent-µs 1.2 x-seq-default-vs-ssh-agent\n", "500.0 µs  ssh-agent 600.0 µs  1.2 x faster  ≥ 1.5  MISS"},
		{"not run", "BenchmarkSignGoals-2 3 1 ns/op 200.0 seq-audited-µs\n", "-  -  -  -  not measured"},
	} {
		m, err := parse(strings.NewReader(c.out), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		report(&b, m)
		var rows []string
		for line := range strings.Lines(b.String()) {
			if strings.HasPrefix(line, "GOAL") || len(rows) > 0 {
				rows = append(rows, strings.Join(strings.Fields(line), " "))
			}
		}
		want := "Ed25519 sign, sequential, default configuration " + strings.Join(strings.Fields(c.want), " ")
		if len(rows) < 3 || rows[1] != want || !strings.HasPrefix(rows[2], "audited Ed25519 sign, sequential ") {
			t.Errorf("%s: the rows begin\n%s\nwant the headline\n%s", c.name, strings.Join(rows[:min(len(rows), 3)], "\n"), want)
		}
	}
}
