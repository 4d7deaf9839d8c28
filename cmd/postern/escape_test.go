package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
	"github.com/postern/postern/gateway/api"
)

// hostile is a name a run can give its executable: it tries to end the
// line, clear the screen and reorder the text.
const hostile = "ssh\n\x1b[2Jrequested by bash (1)\u202e"

// noRaw fails when out holds a control character or the hostile name's
// second line as a line of its own.
func noRaw(t *testing.T, where, out string) {
	t.Helper()
	if strings.ContainsAny(out, "\x1b\u202e\r") || strings.Contains(out, "\n\x1b") || strings.Contains(out, "\nrequested by bash") {
		t.Fatalf("%s: a requester's string reached the output raw:\n%q", where, out)
	}
	if !strings.Contains(out, `ssh\n\x1b[2Jrequested by bash (1)\u202e`) {
		t.Fatalf("%s: the name is not shown escaped:\n%s", where, out)
	}
}

func TestWhyShowsRequesterEscaped(t *testing.T) {
	var b bytes.Buffer
	printWhy(&b, &api.WhyResult{Last: &approvals.Why{Time: time.Now(), Outcome: "DENIED", Requester: hostile + " (4121) ← bash ← claude (3988)",
		Key: "SHA256:k", Explain: "the card was denied", Next: "stop"}})
	noRaw(t, "why", b.String())
	if n := strings.Count(b.String(), "\n"); n != 6 {
		t.Fatalf("why printed %d lines, want 6:\n%s", n, b.String())
	}
	// A key's comment is its adder's, and a run adds keys.
	b.Reset()
	printWhy(&b, &api.WhyResult{Last: &approvals.Why{Time: time.Now(), Outcome: "ALLOWED",
		Key: "SHA256:k (" + hostile + ")", Explain: "covered by a grant", Next: "nothing"}})
	noRaw(t, "why's key", b.String())
	if n := strings.Count(b.String(), "\n"); n != 5 {
		t.Fatalf("why printed %d lines, want 5:\n%s", n, b.String())
	}
}

func TestSessionHistoryShowsRunEscaped(t *testing.T) {
	line := sessionLine(api.AuditSession{Run: "R1", Grant: "G1", Key: "SHA256:k", Approver: "tty:/dev/pts/3",
		Label: "deploy\x1b]0;x\x07", Process: &audit.Process{PID: 7, Exe: "/tmp/" + hostile}, Approved: time.Now()})
	noRaw(t, "sessions --history", line)
	if strings.Count(line, "\n") != 1 || !strings.Contains(line, `label "deploy\x1b]0;x\x07"`) {
		t.Fatalf("sessions --history line:\n%s", line)
	}
}
