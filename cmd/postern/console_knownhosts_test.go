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

// known_hosts is a file any program of the user can edit: a run that
// gives the host key it logs in to a thousand names there does not make
// its card taller than a window, which would leave the card to be denied
// only on the full-screen console, and push its question (the key, the
// host) off the screen of the line console and of a dialog.
func TestConsoleCardOfAHostKnownHostsNamesAThousandTimesFits(t *testing.T) {
	names := make([]string, 1000)
	for i := range names {
		names[i] = fmt.Sprintf("alias-%04d.example.net", i)
	}
	now := time.Now()
	run := approvals.RunView{ProcessView: approvals.ProcessView{PID: 10, Name: "claude"}}
	c := api.Card{ID: "C1", Mode: "session", Purpose: "auth", Run: run, Subjects: []approvals.RunView{run},
		Key:         approvals.KeyView{Fingerprint: "SHA256:key"},
		Destination: &approvals.DestView{Fingerprint: "SHA256:host", Names: []string{"staging-web"}, KnownHosts: names},
		Covers:      "this run", Created: now, Expires: now.Add(time.Minute)}
	m := newConsoleModel(nil, nil)
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 40})
	m.Update(cardsMsg{c})
	m.shownAt = time.Now().Add(-armDelay)
	lines, taller := screen(m, 40)
	if taller || m.layout().cut {
		t.Fatalf("the card does not fit a window of 100×40 (taller %v):\n%s", taller, strings.Join(lines, "\n"))
	}
	if !strings.Contains(c.Text(), "and 992 more") {
		t.Errorf("the card does not say how many names it leaves out:\n%s", c.Text())
	}
	if _, cmd := m.Update(tea.KeyPressMsg{Code: 's', Text: "s"}); cmd == nil {
		t.Fatalf("the card took no answer: note %q", m.note)
	}
}
