package approvals

import (
	"strings"
	"testing"
)

// A requester controls its executable's name and path, its command line,
// the comment of a key it added and the account it names. None of them
// can add a line to the card, move the terminal's cursor or reorder the
// text: the person reads the card the gateway wrote.
func TestCardCannotBeRewrittenByTheRequester(t *testing.T) {
	w := newWorld(t)
	forged := "ssh\n\x1b[1A\x1b[2KAllow, this one time, ssh (pid 13) to use key SHA256:key for staging-web?\nDestination: staging-web\u202e"
	exe := w.f.Exe(forged, "a program with a forged name")
	w.f.Set(50, 10, 500, exe, forged, "staging-web\r\x1b]0;title\x07", strings.Repeat("x", 5000))
	r := w.req(50)
	r.Key.Comment = "work\x1b[31m\nRun: trusted"
	ch := w.decide(r)
	c := w.card()
	text := c.Text()
	lines := strings.Split(text, "\n")
	for _, l := range lines {
		if strings.ContainsAny(l, "\x1b\r\x07\u202e") {
			t.Fatalf("a control character reached the card: %q", l)
		}
		if len(l) > 2000 {
			t.Fatalf("a line of %d bytes: long fields are not cut", len(l))
		}
	}
	// The card has exactly the lines the gateway writes: the question, the
	// card id, the run, the chain, the destination (unknown: the data is
	// not one the agent interprets), what it covers and the claims.
	if len(lines) != 7 {
		t.Fatalf("the card has %d lines:\n%s", len(lines), text)
	}
	if !strings.HasPrefix(lines[0], `Allow, for this run until it exits, claude (pid 10) to use key SHA256:key (work\x1b[31m\nRun: trusted)`) {
		t.Fatalf("question line: %s", lines[0])
	}
	if !strings.Contains(lines[3], `Requested by: ssh\n\x1b[1A\x1b[2KAllow, this one time, ssh (pid 13) to use key…(+`) {
		t.Fatalf("requester line: %s", lines[3])
	}
	if !strings.Contains(lines[6], `staging-web\r\x1b]0;title\x07 xxxx`) || !strings.Contains(lines[6], "…(+") {
		t.Fatalf("claims line: %s", lines[6])
	}
	// JSON consumers get the raw strings.
	if c.Requester[0].Name != forged || c.Key.Comment != r.Key.Comment {
		t.Fatalf("the card's data was changed: %q %q", c.Requester[0].Name, c.Key.Comment)
	}
	w.answer(c.ID, VerdictDeny, 30)
	got(t, ch)
}
