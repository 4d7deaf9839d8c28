package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/gateway/api"
)

// A session card whose requester has a long chain of ancestors (up to
// 65 runs a session could bind) fits a window of 40 lines and can be
// approved there: the console lists the runs around the marked one and
// says how many more there are, where it listed all 65 and the card,
// taller than the window, could only be denied. Every run stays within
// reach of the arrow keys, and the one marked is the one approved.
func TestConsoleSessionCardWithManySubjectsFits(t *testing.T) {
	subjects := make([]approvals.RunView, 65)
	for i := range subjects {
		subjects[i] = approvals.RunView{ProcessView: approvals.ProcessView{PID: 1000 + i, Name: fmt.Sprintf("proc%d", i), Exe: "/usr/bin/sh"}}
	}
	c := api.Card{ID: "CS", Mode: "session", Purpose: "auth", Selected: 3, Subjects: subjects,
		Destination: &approvals.DestView{Fingerprint: "SHA256:x", Names: []string{"git-host"}},
		Created:     time.Now(), Expires: time.Now().Add(time.Minute)}
	m, view, taller := armedConsole(c, 120, 40)
	if taller || strings.Contains(view, "can only be denied") || !strings.Contains(view, "▶ 3. proc3 (pid 1003)") || !strings.Contains(view, "more below") {
		t.Fatalf("a session card of 65 subjects in a window of 40 lines (taller: %v):\n%s", taller, m.View().Content)
	}
	// The last run is reached with the arrow keys, and shown marked.
	for range 70 {
		m.Update(tea.KeyPressMsg{Code: tea.KeyRight})
	}
	m.shownAt = time.Now().Add(-armDelay)
	if view := m.View().Content; !strings.Contains(view, "▶ 64. proc64 (pid 1064)") || !strings.Contains(view, "more above") {
		t.Fatalf("the last subject, marked, is not shown:\n%s", view)
	}
	_, cmd := m.Update(tea.KeyPressMsg{Code: 's', Text: "s"})
	if cmd == nil {
		t.Fatalf("the card took no session approval: note %q", m.note)
	}
}

// On the line console too, a session card for a requester with a long
// chain of ancestors is not taken for a card taller than the terminal
// (which can only be denied) because the list of the runs above it is:
// the card, next to its question, is whole on the screen.
func TestLineConsoleCardWithManySubjectsIsNotTooTall(t *testing.T) {
	subjects := make([]approvals.RunView, 65)
	for i := range subjects {
		subjects[i] = approvals.RunView{ProcessView: approvals.ProcessView{PID: 1000 + i, Name: fmt.Sprintf("proc%d", i)}}
	}
	c := api.Card{ID: "CS", Mode: "session", Purpose: "auth", Selected: 3, Subjects: subjects,
		Destination: &approvals.DestView{Fingerprint: "SHA256:x", Names: []string{"git-host"}}}
	if n := lineCount(lineCard(c, 120)); n <= 40 {
		t.Fatalf("the card and its runs take %d lines: the test needs more than 40", n)
	}
	if tallerThan(c, newPrompt(c), 120, 40) {
		t.Fatal("a session card of 65 runs is taken as taller than a terminal of 40 lines")
	}
	c.Subjects, c.Selected = c.Subjects[:1], 0
	if !tallerThan(c, newPrompt(c), 120, 5) {
		t.Fatal("a card taller than a terminal of 5 lines is not taken as such")
	}
}
